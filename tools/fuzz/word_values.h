// Interesting values for one word of allocator state, given the snapshot's geometry.
//
// The loader trusts two kinds of words it finds in the pages: addresses (chunk-list links,
// free-list and free-run links, cursors, the root, a huge block's address) and counts (page
// frontiers, run lengths, chunk counts, ids, committed bytes). The values below are the ones
// that break the usual assumptions about each: an address in another listed chunk, in a chunk
// the file does not list, just outside the zone, its own address (a cycle), another word's value
// (two lists sharing a node); a count of 0, 1, the maximum, just past a boundary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_rng.h"
#include "header_fields.h"

namespace reheap_fuzz {

struct Choice {
  std::uint64_t value = 0;
  const char* why = "";  // a short label for the mutation's description (a string literal)
};

// A value for a word that holds an address. `where` is the word's own address (0 if it has
// none, e.g. a header field), `current` its value.
Choice pick_address(const Geometry& g, FuzzRng& rng, std::uint64_t where, std::uint64_t current);

// A value for a word of `width` bytes (1..8) that holds a count, an id or a size.
Choice pick_count(const Geometry& g, FuzzRng& rng, std::uint64_t current, std::size_t width);

// A value for a 16-bit page-table entry of a large chunk: a run length in the low 14 bits, a
// "run head" bit and a "run free" bit (heap_state.h), read by free, realloc and the bins.
Choice pick_page_entry(FuzzRng& rng, std::uint16_t current);

// "0x1234" for descriptions.
std::string hex(std::uint64_t v);

}  // namespace reheap_fuzz
