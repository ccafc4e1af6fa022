// used_pages_digest (see reheap/heap_digest.h).
#include "format.h"
#include "reheap/heap_digest.h"
#include "reheap/heap_scope.h"
#include "used_pages.h"

namespace reheap {

std::uint64_t used_pages_digest(const Heap& heap) {
  HeapScope system(nullptr);  // the range list is the process's, not the heap's
  detail::HeapState* h = const_cast<detail::HeapState*>(detail::state(&heap));
  detail::UnpoisonedFreeBlocks unpoisoned(h);  // the digest reads freed blocks' bytes too
  detail::snapshot::Digest digest;
  std::vector<detail::os::PageRange> ranges;
  for (const detail::snapshot::ChunkRun& run : detail::snapshot::chunk_runs(h)) {
    ranges.clear();
    detail::snapshot::used_ranges(h, run, ranges);
    for (const detail::os::PageRange& r : ranges) {
      digest.update(&r.begin, sizeof r.begin);
      digest.update(reinterpret_cast<const void*>(r.begin), r.end - r.begin);
    }
  }
  return digest.value();
}

}  // namespace reheap
