#include "header_fields.h"

#include <cstring>

#include "snapshot_image.h"

namespace reheap_fuzz {

namespace {

bool key_is(const msgpack::object& key, std::string_view name) {
  return key.type == msgpack::type::STR && key.via.str.size == name.size() &&
         std::memcmp(key.via.str.ptr, name.data(), name.size()) == 0;
}

const msgpack::object* find_in(const msgpack::object& map, std::string_view name) {
  if (map.type != msgpack::type::MAP) return nullptr;
  for (std::uint32_t i = 0; i < map.via.map.size; ++i) {
    if (key_is(map.via.map.ptr[i].key, name)) return &map.via.map.ptr[i].val;
  }
  return nullptr;
}

std::uint64_t u64_or(const msgpack::object& map, std::string_view name, std::uint64_t fallback) {
  const msgpack::object* o = find_in(map, name);
  return o != nullptr && o->type == msgpack::type::POSITIVE_INTEGER ? o->via.u64 : fallback;
}

}  // namespace

const ChunkEntry* Geometry::chunk_holding(std::uint64_t address) const noexcept {
  if (!in_zone(address) || chunk_size == 0) return nullptr;
  const std::uint64_t index = (address - zone_base) / chunk_size;
  for (const ChunkEntry& c : chunks) {
    if (c.index == index) return &c;
  }
  return nullptr;
}

bool Geometry::listed(std::uint64_t index) const noexcept {
  for (const ChunkEntry& c : chunks) {
    if (c.index == index) return true;
  }
  return false;
}

std::uint64_t Geometry::unlisted_chunk(unsigned pick) const noexcept {
  const std::uint64_t n = zone_chunks();
  std::uint64_t candidate = 0;
  switch (pick % 3) {
    case 0:
      candidate = chunks.empty() ? 0 : chunks.back().index + 1;
      break;
    case 1:
      candidate = class_half_chunks() == 0 ? 0 : class_half_chunks() - 1;
      break;
    default:
      candidate = class_half_chunks() + class_half_chunks() / 2;
      break;
  }
  // Step past listed chunks (a few steps: a mutant's list may be long, and a listed chunk now
  // and then is harmless).
  for (int tries = 0; n != 0 && tries < 16 && listed(candidate % n); ++tries) {
    ++candidate;
  }
  return n == 0 ? candidate : candidate % n;
}

bool HeaderTree::decode(const std::uint8_t* data, std::size_t size) {
  try {
    // The reader's limits (format.cpp), so that a hostile header cannot make the mutator allocate
    // more than the reader would.
    const msgpack::unpack_limit limits(1u << 21, 64, 1u << 20, 1u << 20, 1u << 20, 8);
    handle_ = msgpack::unpack(reinterpret_cast<const char*>(data), size, nullptr, nullptr, limits);
  } catch (const std::exception&) {
    return false;
  }
  root_ = handle_.get();
  return root_.type == msgpack::type::MAP;
}

std::vector<std::uint8_t> HeaderTree::encode() const {
  msgpack::sbuffer buffer;
  msgpack::pack(buffer, root_);
  const auto* p = reinterpret_cast<const std::uint8_t*>(buffer.data());
  return std::vector<std::uint8_t>(p, p + buffer.size());
}

msgpack::object* HeaderTree::find(std::string_view key) noexcept {
  return const_cast<msgpack::object*>(find_in(root_, key));
}

msgpack::object* HeaderTree::new_objects(std::size_t n) {
  void* p = handle_.zone()->allocate_align(sizeof(msgpack::object) * (n == 0 ? 1 : n),
                                           alignof(msgpack::object));
  return static_cast<msgpack::object*>(p);
}

char* HeaderTree::new_bytes(std::size_t n) {
  return static_cast<char*>(handle_.zone()->allocate_no_align(n == 0 ? 1 : n));
}

Geometry HeaderTree::geometry() const {
  Geometry g;
  g.page_size = u64_or(root_, "page_size", g.page_size);
  g.chunk_size = u64_or(root_, "chunk_size", g.chunk_size);
  // Sizes far from the format's make the derived addresses meaningless and the page counts
  // derived from them enormous (a 1-byte page: billions of page-table pages); the reader rejects
  // any size but the format's anyway, so an edited one is located with the format's.
  auto plausible = [](std::uint64_t v, std::uint64_t low, std::uint64_t high) {
    return v >= low && v <= high && (v & (v - 1)) == 0;
  };
  if (!plausible(g.page_size, 4096, 65536)) g.page_size = 4096;
  if (!plausible(g.chunk_size, std::uint64_t{1} << 20, std::uint64_t{1} << 30)) g.chunk_size = std::uint64_t{64} << 20;
  g.zone_base = u64_or(root_, "zone_base", 0);
  g.zone_size = u64_or(root_, "zone_size", 0);
  g.heap_id = u64_or(root_, "heap_id", 1);
  g.root = u64_or(root_, "root", 0);
  g.limit = u64_or(root_, "limit", 0);
  g.committed = u64_or(root_, "committed", 0);
  if (const msgpack::object* chunks = find_in(root_, "chunks"); chunks != nullptr && chunks->type == msgpack::type::ARRAY) {
    for (std::uint32_t i = 0; i < chunks->via.array.size; ++i) {
      const msgpack::object& e = chunks->via.array.ptr[i];
      if (e.type != msgpack::type::ARRAY || e.via.array.size < 3) continue;
      const msgpack::object* f = e.via.array.ptr;
      if (f[0].type != msgpack::type::POSITIVE_INTEGER || f[1].type != msgpack::type::POSITIVE_INTEGER) continue;
      g.chunks.push_back({f[0].via.u64, f[1].via.u64, f[2].type == msgpack::type::BOOLEAN && f[2].via.boolean});
    }
  }
  return g;
}

std::vector<std::uint8_t> with_header(const std::uint8_t* file, std::size_t size, std::size_t old_length,
                                      const std::vector<std::uint8_t>& header) {
  std::vector<std::uint8_t> out;
  const std::size_t rest = kPreambleSize + old_length;
  out.reserve(size - old_length + header.size());
  out.insert(out.end(), file, file + kPreambleSize);
  store_le(out.data() + 12, 4, header.size());
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), file + rest, file + size);
  return out;
}

}  // namespace reheap_fuzz
