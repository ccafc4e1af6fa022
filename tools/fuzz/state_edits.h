// Semantic edits of the allocator state saved in a snapshot's pages.
//
// A heap saves its allocator with its pages (heap/README.md, "Snapshots"): the heap's state and
// each chunk's header in the class chunks' header lane, a large chunk's header and page table in
// its first pages, a huge run's header in its page 0, free-list links in the first word of free
// class blocks, free-run links in the first words of free page runs. A restore that trusts any of
// these words can be led anywhere, so these edits overwrite exactly such words, then the caller
// reseals the checksums.
//
// The edits are word-granular and find their targets from the header's geometry and from the
// values in the pages (a word whose value is an address in the zone is a link), not from the
// field offsets of heap/src/heap_state.h: reordering or widening those fields changes which word
// a given edit hits, not whether the edits keep reaching the allocator's state.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fuzz_rng.h"
#include "header_fields.h"

namespace reheap_fuzz {

// What a saved page holds, from its address alone.
const char* region_of(const Geometry& g, std::uint64_t address);

// Applies one edit to the pages of `file` (a whole snapshot) and returns its description, or ""
// if the file has no page to edit. May insert a run (to reach a metadata page the writer left out
// as a hole), so `file` may grow by a page and two records.
std::string edit_state(std::vector<std::uint8_t>& file, const Geometry& g, FuzzRng& rng);

// Overwrites the `width` bytes at `address` in `file` with `value`; false if no data run of the
// file holds them. For editors that know which word they want (hostile_inputs.cpp).
bool poke(std::vector<std::uint8_t>& file, const Geometry& g, std::uint64_t address, std::size_t width,
          std::uint64_t value);
// The `width` bytes at `address`, if a data run holds them.
bool peek(const std::vector<std::uint8_t>& file, const Geometry& g, std::uint64_t address, std::size_t width,
          std::uint64_t* value);

// Addresses of the saved, `width`-aligned words of [begin, end) whose value satisfies `match`.
std::vector<std::uint64_t> find_words(const std::vector<std::uint8_t>& file, const Geometry& g,
                                      std::uint64_t begin, std::uint64_t end, std::size_t width,
                                      const std::function<bool(std::uint64_t)>& match);

}  // namespace reheap_fuzz
