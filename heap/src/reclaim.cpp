// Reclaim: a heap at its limit gives back what it holds but does not use before it refuses an
// allocation (the freed huge blocks it keeps, idle size classes, an empty large chunk), so that
// memory freed in one size class (or one kind of block) serves another.
//
// Without it, a heap filled to its limit with one class and then emptied kept every page
// committed, and every other class failed for good. Reclaiming costs a walk of the free lists
// (O(free blocks)) and one madvise per lane given back, so it runs only when a charge would pass
// the limit, never on an unlimited heap; a heap that keeps asking past its limit pays the walk on
// every refused request.
#include "heap_fast.h"

namespace reheap::detail {

REHEAP_SLOW_PATH bool charge_slow(HeapState* h, std::size_t bytes, Charge kind, unsigned carving) noexcept {
  // A request larger than the whole limit cannot be met by giving anything back.
  if (kind == Charge::kAllocation && h->limit != kUnlimited && bytes <= h->limit) {
    const std::size_t before = h->committed;
    // Freed huge blocks kept for reuse first: giving them back costs no walk.
    if (give_back_all_retained(h) && bytes <= h->limit && h->committed <= h->limit - bytes) {
      h->committed += bytes;
      return true;
    }
    for (unsigned cls = 0; cls < kNumClasses; ++cls) {
      if (cls != carving) reset_idle_class(h, cls);
    }
    release_held_run(h);
    reset_empty_carve_chunk(h);
    if (h->committed < before && bytes <= h->limit && h->committed <= h->limit - bytes) {
      h->committed += bytes;
      return true;
    }
  }
  if (kind == Charge::kAllocation) ++h->failed;
  return false;
}

}  // namespace reheap::detail
