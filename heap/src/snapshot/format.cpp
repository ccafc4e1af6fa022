// The header codec: SnapshotHeader <-> msgpack map (see heap/SNAPSHOT_FORMAT.md, "Header").
#include "format.h"

#include <sys/random.h>
#include <xxhash.h>

#include <chrono>
#include <limits>
#include <msgpack.hpp>
#include <new>

#include "../layout.h"

using reheap::detail::kChunkSize;

namespace reheap::detail::snapshot {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the format is little-endian");

void fail(SnapshotErrc code, const std::string& name, const std::string& what) {
  throw SnapshotError(code, name + ": " + what);
}

std::uint64_t new_snapshot_id() noexcept {
  std::uint64_t id = 0;
  while (id == 0) {
    if (::getrandom(&id, sizeof id, 0) != sizeof id) {
      id = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) *
           0x9E3779B97F4A7C15ull;
    }
  }
  return id;
}

std::uint64_t unix_time_ns() noexcept {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

std::uint64_t checksum(const void* data, std::size_t size) noexcept {
  return XXH3_64bits(data, size);
}

Digest::Digest() : state_(XXH3_createState()) {
  if (state_ == nullptr) throw std::bad_alloc();
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}
Digest::~Digest() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }
void Digest::reset() noexcept { XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_)); }
void Digest::update(const void* data, std::size_t size) noexcept {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, size);
}
std::uint64_t Digest::value() const noexcept {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_));
}

namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

void key(Packer& pk, const char* k) { pk.pack(std::string_view(k)); }

}  // namespace

std::vector<unsigned char> encode_header(const SnapshotHeader& h) {
  msgpack::sbuffer buffer;
  Packer pk(buffer);
  const bool identity = h.saved_by_node >= 0 && h.saved_by_incarnation >= 0;
  pk.pack_map(identity ? 25 : 23);
  key(pk, "kind"), pk.pack(static_cast<unsigned>(h.kind));
  key(pk, "id"), pk.pack(h.id);
  key(pk, "parent_id"), pk.pack(h.parent_id);
  key(pk, "parent_file"), pk.pack(h.parent_file);
  key(pk, "generation"), pk.pack(h.generation);
  key(pk, "created_unix_ns"), pk.pack(h.created_unix_ns);
  key(pk, "page_size"), pk.pack(h.page_size);
  key(pk, "chunk_size"), pk.pack(h.chunk_size);
  key(pk, "zone_base"), pk.pack(std::uint64_t{h.zone_base});
  key(pk, "zone_size"), pk.pack(std::uint64_t{h.zone_size});
  key(pk, "checked_build"), pk.pack(h.checked_build);
  key(pk, "heap_id"), pk.pack(h.heap_id);
  key(pk, "root"), pk.pack(std::uint64_t{h.root});
  key(pk, "limit"), pk.pack(std::uint64_t{h.limit_bytes});
  key(pk, "committed"), pk.pack(std::uint64_t{h.committed_bytes});
  key(pk, "chunks");
  pk.pack_array(static_cast<std::uint32_t>(h.chunks.size()));
  for (const SnapshotChunk& c : h.chunks) {
    pk.pack_array(3);
    pk.pack(c.index), pk.pack(static_cast<unsigned>(c.use)), pk.pack(c.fresh);
  }
  key(pk, "pages");
  pk.pack_map(5);
  key(pk, "class");
  pk.pack_array(kNumClasses);
  for (std::uint64_t n : h.pages.by_class) pk.pack(n);
  key(pk, "large"), pk.pack(h.pages.large);
  key(pk, "huge"), pk.pack(h.pages.huge);
  key(pk, "metadata"), pk.pack(h.pages.metadata);
  key(pk, "zero"), pk.pack(h.pages.zero);
  key(pk, "layout");
  pk.pack_array(static_cast<std::uint32_t>(h.layout.size()));
  for (const LoadedObject& o : h.layout) {
    pk.pack_array(4);
    pk.pack(o.path), pk.pack(std::uint64_t{o.base}), pk.pack(o.build_id), pk.pack(o.main_executable);
  }
  key(pk, "segments");
  std::uint32_t segments = 0;
  for (const LoadedObject& o : h.layout) segments += static_cast<std::uint32_t>(o.segments.size());
  pk.pack_array(segments);
  for (std::uint32_t i = 0; i < h.layout.size(); ++i) {
    for (const ImageSegment& s : h.layout[i].segments) {
      pk.pack_array(4);
      pk.pack(i), pk.pack(std::uint64_t{s.begin}), pk.pack(std::uint64_t{s.end});
      pk.pack((s.writable ? 1u : 0u) | (s.executable ? 2u : 0u));
    }
  }
  key(pk, "program_refs");
  pk.pack_array(static_cast<std::uint32_t>(h.program_refs.size()));
  for (const ProgramRef& r : h.program_refs) {
    pk.pack_array(10);
    pk.pack(r.value), pk.pack(r.object), pk.pack(static_cast<unsigned>(r.kind));
    pk.pack(r.symbol), pk.pack(r.file), pk.pack(r.function), pk.pack(r.size), pk.pack(r.offset);
    pk.pack_bin(static_cast<std::uint32_t>(r.bytes.size()));
    pk.pack_bin_body(r.bytes.data(), static_cast<std::uint32_t>(r.bytes.size()));
    pk.pack(r.words);
  }
  key(pk, "tracking"), pk.pack(h.tracking);
  if (identity) {
    key(pk, "node"), pk.pack(static_cast<std::uint64_t>(h.saved_by_node));
    key(pk, "incarnation"), pk.pack(static_cast<std::uint64_t>(h.saved_by_incarnation));
  }
  key(pk, "format"), pk.pack(std::string_view("reheap snapshot, see heap/SNAPSHOT_FORMAT.md"));
  key(pk, "writer"), pk.pack(std::string_view("reheap 0.1"));
  return std::vector<unsigned char>(buffer.data(), buffer.data() + buffer.size());
}

namespace {

// Typed access to the decoded map; every mismatch is a corrupt header.
class Fields {
 public:
  Fields(const msgpack::object& map, const std::string& name) : name_(name) {
    if (map.type != msgpack::type::MAP) bad("the header is not a map");
    map_ = &map.via.map;
  }

  bool has(const char* k) const noexcept { return find(k) != nullptr; }
  const msgpack::object& get(const char* k) const {
    if (const msgpack::object* o = find(k)) return *o;
    bad(std::string("the header has no field \"") + k + "\"");
  }
  const msgpack::object* find(const char* k) const noexcept {
    for (std::uint32_t i = 0; i < map_->size; ++i) {
      const msgpack::object& key_object = map_->ptr[i].key;
      if (key_object.type == msgpack::type::STR && key_object.via.str.size == std::strlen(k) &&
          std::memcmp(key_object.via.str.ptr, k, key_object.via.str.size) == 0) {
        return &map_->ptr[i].val;
      }
    }
    return nullptr;
  }

  std::uint64_t u64(const msgpack::object& o, const char* what) const {
    if (o.type != msgpack::type::POSITIVE_INTEGER) bad(std::string("field ") + what + " is not an unsigned integer");
    return o.via.u64;
  }
  std::uint64_t u64(const char* k) const { return u64(get(k), k); }
  std::uint32_t u32(const msgpack::object& o, const char* what) const {
    const std::uint64_t v = u64(o, what);
    if (v > std::numeric_limits<std::uint32_t>::max()) bad(std::string("field ") + what + " is out of range");
    return static_cast<std::uint32_t>(v);
  }
  std::uint32_t u32(const char* k) const { return u32(get(k), k); }
  bool boolean(const msgpack::object& o, const char* what) const {
    if (o.type != msgpack::type::BOOLEAN) bad(std::string("field ") + what + " is not a boolean");
    return o.via.boolean;
  }
  bool boolean(const char* k) const { return boolean(get(k), k); }
  std::string str(const msgpack::object& o, const char* what) const {
    if (o.type != msgpack::type::STR) bad(std::string("field ") + what + " is not a string");
    return std::string(o.via.str.ptr, o.via.str.size);
  }
  std::string str(const char* k) const { return str(get(k), k); }
  const msgpack::object_array& array(const msgpack::object& o, const char* what,
                                     std::size_t exact = 0) const {
    if (o.type != msgpack::type::ARRAY) bad(std::string("field ") + what + " is not an array");
    if (exact != 0 && o.via.array.size != exact) bad(std::string("field ") + what + " has the wrong length");
    return o.via.array;
  }

  [[noreturn]] void bad(const std::string& what) const {
    fail(SnapshotErrc::kCorrupt, name_, "corrupt header: " + what);
  }

 private:
  const msgpack::object_map* map_ = nullptr;
  const std::string& name_;
};

// The segments and program_refs keys, absent from files of older writers.
void decode_program_refs(const Fields& f, SnapshotHeader& h) {
  if (const msgpack::object* segments = f.find("segments")) {
    const auto& list = f.array(*segments, "segments");
    for (std::uint32_t i = 0; i < list.size; ++i) {
      const auto& entry = f.array(list.ptr[i], "segments[]", 4);
      const std::uint32_t object = f.u32(entry.ptr[0], "segments[].object");
      if (object >= h.layout.size()) f.bad("a segment of an object not in the layout");
      ImageSegment s;
      s.begin = f.u64(entry.ptr[1], "segments[].begin");
      s.end = f.u64(entry.ptr[2], "segments[].end");
      const std::uint64_t flags = f.u64(entry.ptr[3], "segments[].flags");
      if (s.end <= s.begin || flags > 3) f.bad("a malformed segment");
      s.writable = (flags & 1) != 0;
      s.executable = (flags & 2) != 0;
      std::vector<ImageSegment>& into = h.layout[object].segments;
      if (!into.empty() && into.back().end > s.begin) f.bad("segments not in ascending order");
      into.push_back(s);
    }
  }
  const msgpack::object* refs = f.find("program_refs");
  if (refs == nullptr) return;
  h.has_program_refs = true;
  const auto& list = f.array(*refs, "program_refs");
  h.program_refs.reserve(list.size);
  for (std::uint32_t i = 0; i < list.size; ++i) {
    const auto& entry = f.array(list.ptr[i], "program_refs[]", 10);
    ProgramRef r;
    r.value = f.u64(entry.ptr[0], "program_refs[].value");
    r.object = f.u32(entry.ptr[1], "program_refs[].object");
    const std::uint64_t kind = f.u64(entry.ptr[2], "program_refs[].kind");
    if (r.object >= h.layout.size() || kind > 2) f.bad("a program ref of an unknown object or kind");
    r.kind = static_cast<ProgramRefKind>(kind);
    r.symbol = f.str(entry.ptr[3], "program_refs[].symbol");
    r.file = f.str(entry.ptr[4], "program_refs[].file");
    r.function = f.boolean(entry.ptr[5], "program_refs[].function");
    r.size = f.u64(entry.ptr[6], "program_refs[].size");
    r.offset = f.u64(entry.ptr[7], "program_refs[].offset");
    if (entry.ptr[8].type != msgpack::type::BIN) f.bad("field program_refs[].bytes is not binary");
    r.bytes.assign(entry.ptr[8].via.bin.ptr, entry.ptr[8].via.bin.size);
    r.words = f.u64(entry.ptr[9], "program_refs[].words");
    if (!h.program_refs.empty() && h.program_refs.back().value >= r.value) {
      f.bad("program refs not in ascending order of value");
    }
    h.program_refs.push_back(std::move(r));
  }
}

}  // namespace

SnapshotHeader decode_header(const unsigned char* data, std::size_t size, std::uint32_t version,
                             const std::string& name) {
  msgpack::object_handle handle;
  try {
    // Limits keep a hostile header from asking for huge allocations: no array or map in a valid
    // header is longer than the zone's chunk count, and none is nested deeper than 4.
    const msgpack::unpack_limit limits(1u << 21, 64, 1u << 20, 1u << 20, 1u << 20, 8);
    handle = msgpack::unpack(reinterpret_cast<const char*>(data), size, nullptr, nullptr, limits);
  } catch (const std::exception& e) {
    fail(SnapshotErrc::kCorrupt, name, std::string("corrupt header: msgpack: ") + e.what());
  }
  const Fields f(handle.get(), name);
  SnapshotHeader h;
  h.format_version = version;
  const std::uint64_t kind = f.u64("kind");
  if (kind > 1) f.bad("unknown kind " + std::to_string(kind));
  h.kind = static_cast<SnapshotKind>(kind);
  h.id = f.u64("id");
  h.parent_id = f.u64("parent_id");
  h.parent_file = f.str("parent_file");
  h.generation = f.u64("generation");
  h.created_unix_ns = f.u64("created_unix_ns");
  h.page_size = f.u32("page_size");
  h.chunk_size = f.u64("chunk_size");
  h.zone_base = f.u64("zone_base");
  h.zone_size = f.u64("zone_size");
  h.checked_build = f.boolean("checked_build");
  h.heap_id = f.u64("heap_id");
  h.root = f.u64("root");
  h.limit_bytes = f.u64("limit");
  h.committed_bytes = f.u64("committed");
  h.tracking = f.str("tracking");
  // Optional (added after version 1 first shipped; only messages use them).
  if (f.has("node") && f.has("incarnation")) {
    h.saved_by_node = static_cast<std::int64_t>(f.u32("node"));
    h.saved_by_incarnation = static_cast<std::int64_t>(f.u32("incarnation"));
  }
  // Version 1 has one geometry. Checking it here (not only in restore) bounds every run a reader
  // hands out to one 64 MiB chunk, whatever a crafted header claims.
  if (h.page_size != kPageSize) f.bad("page size " + std::to_string(h.page_size) + " (version 1 has 4096)");
  if (h.chunk_size != kChunkSize) f.bad("chunk size " + std::to_string(h.chunk_size) + " (version 1 has 64 MiB)");
  if (h.zone_size == 0 || h.zone_base % h.chunk_size != 0 || h.zone_size % h.chunk_size != 0 ||
      h.zone_base + h.zone_size < h.zone_base) {
    f.bad("the zone is not a whole number of chunks");
  }
  // Where a zone can be (zone.cpp's rule): this also keeps every chunk index within 32 bits, so
  // no address outside the zone can alias a listed chunk's index.
  if (h.zone_base + h.zone_size > (std::uint64_t{1} << 47)) {
    f.bad("the zone lies outside the 47-bit user address space");
  }
  if (h.id == 0) f.bad("snapshot id 0");
  if ((h.kind == SnapshotKind::kFull) != (h.parent_id == 0)) {
    f.bad(h.kind == SnapshotKind::kFull ? "a full snapshot names a parent" : "an increment names no parent");
  }
  if (h.kind == SnapshotKind::kIncremental && (h.parent_file.empty() || h.generation < 2)) {
    f.bad("an increment without a parent file or with generation < 2");
  }
  const std::uint64_t zone_chunks = h.zone_size / h.chunk_size;
  // A heap id is its first chunk's index + 1 in the low 32 bits and a generation above
  // (heap/src/zone_impl.h); bit 63 is never set.
  const std::uint64_t first_chunk_plus_one = h.heap_id & 0xffffffffu;
  if (first_chunk_plus_one == 0 || first_chunk_plus_one > zone_chunks || (h.heap_id >> 63) != 0) {
    f.bad("heap id out of the zone");
  }

  const auto& chunks = f.array(f.get("chunks"), "chunks");
  if (chunks.size == 0 || chunks.size > zone_chunks) f.bad("chunk count out of range");
  h.chunks.reserve(chunks.size);
  bool first_found = false;
  for (std::uint32_t i = 0; i < chunks.size; ++i) {
    const auto& entry = f.array(chunks.ptr[i], "chunks[]", 3);
    SnapshotChunk c;
    c.index = f.u32(entry.ptr[0], "chunks[].index");
    const std::uint64_t use = f.u64(entry.ptr[1], "chunks[].use");
    if (use > 2) f.bad("unknown chunk use " + std::to_string(use));
    c.use = static_cast<ChunkUse>(use);
    c.fresh = f.boolean(entry.ptr[2], "chunks[].fresh");
    if (c.index >= zone_chunks) f.bad("chunk index out of the zone");
    if (!h.chunks.empty() && c.index <= h.chunks.back().index) f.bad("chunks not in ascending order");
    if (c.index + 1 == first_chunk_plus_one) {
      if (c.use != ChunkUse::kClass) f.bad("the heap's first chunk is not a class chunk");
      first_found = true;
    }
    h.chunks.push_back(c);
  }
  if (!first_found) f.bad("the heap's first chunk is not listed");

  const Fields pages(f.get("pages"), name);
  const auto& by_class = f.array(pages.get("class"), "pages.class", kNumClasses);
  for (unsigned i = 0; i < kNumClasses; ++i) h.pages.by_class[i] = f.u64(by_class.ptr[i], "pages.class[]");
  h.pages.large = pages.u64("large");
  h.pages.huge = pages.u64("huge");
  h.pages.metadata = pages.u64("metadata");
  h.pages.zero = pages.u64("zero");

  const auto& layout = f.array(f.get("layout"), "layout");
  h.layout.reserve(layout.size);
  for (std::uint32_t i = 0; i < layout.size; ++i) {
    const auto& entry = f.array(layout.ptr[i], "layout[]", 4);
    LoadedObject o;
    o.path = f.str(entry.ptr[0], "layout[].path");
    o.base = f.u64(entry.ptr[1], "layout[].base");
    o.build_id = f.str(entry.ptr[2], "layout[].build_id");
    o.main_executable = f.boolean(entry.ptr[3], "layout[].main");
    h.layout.push_back(std::move(o));
  }
  decode_program_refs(f, h);
  return h;
}

}  // namespace reheap::detail::snapshot
