// Heap statistics, derived on request so that no allocation or free pays for bookkeeping:
// live class blocks are the blocks carved minus the blocks on the free lists and in purged lanes.
#include "heap_records.h"
#include "heap_state.h"
#include "layout.h"

namespace reheap {

HeapStats Heap::stats() const noexcept {
  const detail::HeapState* h = detail::state(this);
  HeapStats s;
  s.reserved_bytes = (std::size_t{h->class_chunks} + h->large_chunks) * detail::kChunkSize;
  s.committed_bytes = h->committed;
  s.limit_bytes = h->limit;
  s.class_chunks = h->class_chunks;
  s.large_chunks = h->large_chunks;
  for (unsigned cls = 0; cls < kNumClasses; ++cls) {
    ClassStats& c = s.classes[cls];
    c.block_size = kClassSize[cls];
    for (void* p = h->free[cls]; p != nullptr; p = *static_cast<void* const*>(p)) ++c.free_blocks;
    c.purged_blocks = detail::purged_blocks(h, cls);
    c.live_blocks = h->cursor[cls].carved - c.free_blocks - c.purged_blocks;
    s.live_blocks += c.live_blocks;
    s.live_bytes += c.live_blocks * c.block_size;
  }
  s.large_live_blocks = h->large_live_blocks;
  s.large_live_bytes = h->large_live_pages * kPageSize;
  s.large_free_bytes = detail::free_run_pages(h) * kPageSize;
  s.huge_live_blocks = h->huge_live_blocks;
  s.huge_live_bytes = h->huge_live_bytes;
  s.huge_retained_blocks = h->retained_huge_runs;
  s.huge_retained_bytes = h->retained_huge_bytes;
  s.retained_resident_bytes = detail::resident_retained_bytes(h);
  s.live_blocks += h->large_live_blocks + h->huge_live_blocks;
  s.live_bytes += s.large_live_bytes + s.huge_live_bytes;
  s.failed_allocations = h->failed;
  s.foreign_frees = detail::foreign_frees_of(h->id);
  s.os.mprotect = detail::mprotect_calls(h);
  s.os.madvise = h->madvise_calls + detail::purge_calls(h);
  return s;
}

}  // namespace reheap
