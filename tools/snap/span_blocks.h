// The spans of differing bytes `diff` reports, each cut at the boundaries of the allocator's
// blocks and attributed to the block it lies in (block_map.h).
//
// A span is found without knowing where blocks begin (page_diff.h), so one span can cover the
// end of one block and the start of the next; it is cut there, and each piece's differing bytes
// are counted again from both files. Bytes of a range that is only in A are attributed with A's
// state; changed bytes and bytes only in B with B's (the later state, as a diff is usually
// read), so a block that was freed and replaced by another of a different size is named as B
// has it.
#pragma once

#include <cstdint>
#include <vector>

#include "block_map.h"
#include "page_diff.h"
#include "stored_pages.h"

namespace reheap::snap {

struct AttributedSpan {
  std::uintptr_t begin = 0;  // first differing byte
  std::uintptr_t end = 0;    // one past the last
  std::uint64_t bytes = 0;   // differing bytes in [begin, end)
  std::size_t range = 0;     // index in PageDiff::ranges
  BlockInfo block;
};

std::vector<AttributedSpan> attribute_spans(const PageDiff& diff, const StoredPages& a,
                                            const StoredPages& b, BlockMap& map_a,
                                            BlockMap& map_b);

}  // namespace reheap::snap
