// Which pages of a heap hold anything: the snapshot writer's view of the allocator.
//
// A heap is a list of chunk runs (class chunks, large chunks, huge runs), and within each the
// allocator knows exactly how far it ever wrote: a class's lanes up to its carving cursor (and
// the committed window of its current lane), a large chunk up to its frontier, a huge block up to
// its size, plus the header page and, in checked builds, the free-block shadow. Pages outside
// these ranges were never written and read as zero, so a snapshot need not look at them.
// Used ranges grow while a chunk belongs to the heap, except when a heap at its limit reclaims
// (reclaim.cpp): a reset class cursor or carve-chunk frontier moves back, and the pages past it
// are discarded first. Those pages lie in the tracked prefix and read as zero; the write tracker
// reports a discard as a write on the kernels here (os/write_tracker.h says which kernels do), so
// the next increment holds them as zero runs. On a kernel that does not report it, the restored
// image would keep the parent's bytes past the cursor or frontier: unused memory the allocator
// never reads, but not zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../heap_state.h"
#include "../os/write_tracker.h"
#include "reheap/snapshot_file.h"

namespace reheap::detail::snapshot {

struct ChunkRun {
  std::uintptr_t base = 0;      // address of the first chunk
  std::uint32_t first_index = 0;  // its index in the zone
  std::uint32_t chunks = 1;
  ChunkUse use = ChunkUse::kClass;
};

// The heap's chunk runs in ascending address order.
std::vector<ChunkRun> chunk_runs(const HeapState* h);

// Appends the page ranges of `run` the heap may have written, ascending and merged.
void used_ranges(const HeapState* h, const ChunkRun& run, std::vector<os::PageRange>& out);

}  // namespace reheap::detail::snapshot
