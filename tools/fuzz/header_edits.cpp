#include "header_edits.h"

#include <cstring>

#include "word_values.h"

namespace reheap_fuzz {

namespace {

// A key for a description: mutated keys may hold any byte, and descriptions are printed.
std::string key_text(const msgpack::object& key) {
  if (key.type != msgpack::type::STR) return "?";
  std::string text(key.via.str.ptr, key.via.str.size);
  for (char& c : text) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return text;
}

// Entry k of the chunk list if it has the shape [index, use, fresh], else null.
msgpack::object* chunk_entry(msgpack::object_array& a, std::uint32_t k) {
  msgpack::object& e = a.ptr[k];
  return e.type == msgpack::type::ARRAY && e.via.array.size == 3 ? e.via.array.ptr : nullptr;
}

void set_u64(msgpack::object& o, std::uint64_t v) {
  o.type = msgpack::type::POSITIVE_INTEGER;
  o.via.u64 = v;
}

// Changes the value of an integer field; addresses get address values, the rest counts.
std::string edit_integer(const std::string& name, msgpack::object& value, const Geometry& g, FuzzRng& rng) {
  const std::uint64_t old = value.via.u64;
  Choice c;
  if (name == "root") {
    c = pick_address(g, rng, 0, old);
  } else if (name == "heap_id" && !g.chunks.empty() && rng.chance(60)) {
    // Another chunk's index + 1: the heap's state is then looked for in the wrong chunk.
    const ChunkEntry& e = g.chunks[rng.below(g.chunks.size())];
    // Keeps the generation (the id's high bits), so that only the chunk part lies.
    c = {(old & ~std::uint64_t{0xffffffffu}) | (e.index + 1 + (rng.chance(25) ? 1 : 0)), "another chunk's id"};
  } else if ((name == "zone_base" || name == "zone_size") && rng.chance(60)) {
    const std::uint64_t steps[] = {g.chunk_size, g.chunk_size * 64, g.zone_size / 2};
    const std::uint64_t step = steps[rng.below(std::size(steps))];
    c = {rng.chance(50) ? old + step : old - step, "moved by chunks"};
  } else {
    c = pick_count(g, rng, old, 8);
  }
  set_u64(value, c.value);
  return "header " + name + " " + hex(old) + " -> " + hex(c.value) + " (" + c.why + ")";
}

// One change to the `chunks` array: an entry's index, use or fresh flag, or the list's shape.
std::string edit_chunks(HeaderTree& tree, msgpack::object& chunks, const Geometry& g, FuzzRng& rng) {
  msgpack::object_array& a = chunks.via.array;
  const std::uint32_t n = a.size;
  const std::uint32_t i = static_cast<std::uint32_t>(rng.below(n));
  const bool well_formed = n != 0 && chunk_entry(a, i) != nullptr;
  msgpack::object* other = n != 0 ? chunk_entry(a, static_cast<std::uint32_t>(rng.below(n))) : nullptr;
  if (other == nullptr) other = well_formed ? chunk_entry(a, i) : nullptr;
  switch (well_formed ? rng.below(7) : 4) {
    case 0: {  // another index: a neighbour, another entry's, unlisted, past the zone
      msgpack::object& index = a.ptr[i].via.array.ptr[0];
      const std::uint64_t old = index.type == msgpack::type::POSITIVE_INTEGER ? index.via.u64 : 0;
      const std::uint64_t choices[] = {old + 1, old - 1, other[0].via.u64,
                                       g.unlisted_chunk(static_cast<unsigned>(rng.below(3))), g.zone_chunks(),
                                       g.class_half_chunks(), g.class_half_chunks() - 1, 0xffffffffull,
                                       std::uint64_t{1} << 32};
      const std::uint64_t v = choices[rng.below(std::size(choices))];
      set_u64(index, v);
      return "header chunks[" + std::to_string(i) + "].index " + std::to_string(old) + " -> " + std::to_string(v);
    }
    case 1: {  // another use: a class chunk called large, a large one huge, an unknown use
      msgpack::object& use = a.ptr[i].via.array.ptr[1];
      const std::uint64_t v = rng.below(4);
      set_u64(use, v);
      return "header chunks[" + std::to_string(i) + "].use -> " + std::to_string(v);
    }
    case 2: {
      msgpack::object& fresh = a.ptr[i].via.array.ptr[2];
      const bool was = fresh.type == msgpack::type::BOOLEAN && fresh.via.boolean;
      fresh.type = msgpack::type::BOOLEAN;
      fresh.via.boolean = !was;
      return "header chunks[" + std::to_string(i) + "].fresh flipped";
    }
    case 3: {  // drop an entry: a chunk the pages still use is no longer the heap's
      for (std::uint32_t k = i; k + 1 < n; ++k) a.ptr[k] = a.ptr[k + 1];
      --a.size;
      return "header chunks[" + std::to_string(i) + "] dropped";
    }
    case 4: {  // add an entry (an unlisted chunk, or a copy of one): the list grows by one
      msgpack::object* grown = tree.new_objects(n + 1);
      for (std::uint32_t k = 0; k < n; ++k) grown[k] = a.ptr[k];
      msgpack::object* entry = tree.new_objects(3);
      set_u64(entry[0], g.unlisted_chunk(static_cast<unsigned>(rng.below(3))));
      set_u64(entry[1], rng.below(3));
      entry[2].type = msgpack::type::BOOLEAN;
      entry[2].via.boolean = rng.chance(30);
      msgpack::object added;
      added.type = msgpack::type::ARRAY;
      added.via.array.size = 3;
      added.via.array.ptr = entry;
      const std::uint32_t at = static_cast<std::uint32_t>(rng.below(n + 1));
      for (std::uint32_t k = n; k > at; --k) grown[k] = grown[k - 1];
      grown[at] = (well_formed && rng.chance(30)) ? a.ptr[i] : added;
      a.ptr = grown;
      a.size = n + 1;
      return "header chunks: entry added at " + std::to_string(at);
    }
    case 5: {  // swap two entries: the list out of order
      const std::uint32_t j = static_cast<std::uint32_t>(rng.below(n));
      std::swap(a.ptr[i], a.ptr[j]);
      return "header chunks[" + std::to_string(i) + "] and [" + std::to_string(j) + "] swapped";
    }
    default: {  // the heap's first chunk moved to another chunk's place
      std::swap(a.ptr[i].via.array.ptr[0], other[0]);
      return "header chunks[" + std::to_string(i) + "].index swapped with another entry's";
    }
  }
}

// Changes the type of a value, or removes the field: the decoder's "missing or ill-typed" paths.
std::string edit_shape(HeaderTree& tree, std::uint32_t i, FuzzRng& rng) {
  msgpack::object_map& m = tree.root().via.map;
  const std::string name = key_text(m.ptr[i].key);
  msgpack::object& v = m.ptr[i].val;
  switch (rng.below(4)) {
    case 0:
      m.ptr[i] = m.ptr[m.size - 1];
      --m.size;
      return "header " + name + " removed";
    case 1:
      v.type = msgpack::type::NEGATIVE_INTEGER;
      v.via.i64 = -1 - static_cast<std::int64_t>(rng.below(1000));
      return "header " + name + " made a negative integer";
    case 2: {
      const char* texts[] = {"", "..", "../../etc/passwd", "parent.snap", "\xff\xfe"};
      const char* t = texts[rng.below(std::size(texts))];
      const std::size_t len = std::strlen(t);
      char* copy = tree.new_bytes(len);
      std::memcpy(copy, t, len);
      v.type = msgpack::type::STR;
      v.via.str.ptr = copy;
      v.via.str.size = static_cast<std::uint32_t>(len);
      return "header " + name + " made the string \"" + (len != 0 && t[0] == '\xff' ? "<not UTF-8>" : t) + "\"";
    }
    default:
      v.type = msgpack::type::NIL;
      return "header " + name + " made nil";
  }
}

}  // namespace

std::string edit_header(HeaderTree& tree, const Geometry& g, FuzzRng& rng) {
  msgpack::object_map& m = tree.root().via.map;
  if (m.size == 0) return "";
  // The allocator-facing fields first: they decide which chunks are taken and where the state
  // is looked for. The rest are picked uniformly.
  static const char* const kFocus[] = {"heap_id", "root", "committed", "limit", "chunks", "chunks",
                                       "chunks", "zone_base", "zone_size", "kind", "parent_id", "pages"};
  std::uint32_t i = static_cast<std::uint32_t>(rng.below(m.size));
  if (rng.chance(75)) {
    const char* want = kFocus[rng.below(std::size(kFocus))];
    for (std::uint32_t k = 0; k < m.size; ++k) {
      if (key_text(m.ptr[k].key) == want) i = k;
    }
  }
  if (rng.chance(8)) return edit_shape(tree, i, rng);
  const std::string name = key_text(m.ptr[i].key);
  msgpack::object& v = m.ptr[i].val;
  switch (v.type) {
    case msgpack::type::POSITIVE_INTEGER:
      return edit_integer(name, v, g, rng);
    case msgpack::type::BOOLEAN:
      v.via.boolean = !v.via.boolean;
      return "header " + name + " flipped";
    case msgpack::type::ARRAY:
      if (name == "chunks") return edit_chunks(tree, v, g, rng);
      if (v.via.array.size != 0) {
        msgpack::object& e = v.via.array.ptr[rng.below(v.via.array.size)];
        if (e.type == msgpack::type::POSITIVE_INTEGER) return edit_integer(name + "[]", e, g, rng);
      }
      return edit_shape(tree, i, rng);
    case msgpack::type::MAP:
      if (v.via.map.size != 0) {
        msgpack::object_kv& kv = v.via.map.ptr[rng.below(v.via.map.size)];
        if (kv.val.type == msgpack::type::POSITIVE_INTEGER) {
          return edit_integer(name + "." + key_text(kv.key), kv.val, g, rng);
        }
      }
      return edit_shape(tree, i, rng);
    default:
      return edit_shape(tree, i, rng);
  }
}

}  // namespace reheap_fuzz
