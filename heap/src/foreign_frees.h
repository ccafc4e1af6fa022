// Foreign frees: frees of a live heap's blocks that release builds ignored because the heap was
// not current on the freeing thread (report.h, Misuse::kNotCurrentHeap), counted by heap.
//
// Such a free is never legitimate, and it usually means more than a leaked block: the object
// that freed it (a std::string assigned, a vector grown outside a HeapScope) now points at memory
// outside its heap, so a snapshot of that heap would restore pointers that mean nothing. Saves
// therefore refuse a heap with a foreign free (snapshot.h), and HeapStats::foreign_frees shows the
// count.
//
// The counts live in process memory, never in the heap: they describe this process's use of the
// heap, not its state, and a count written into a heap's pages by a thread racing with its
// destruction could land in the next heap recycled there. A heap id names its first chunk and
// that chunk's generation, so a recycled chunk's next heap never inherits a count; a heap's entry
// goes when it is destroyed. The table is fixed (a free may not allocate): past
// kForeignFreeHeapsTracked heaps at once, further foreign frees are counted for no heap in particular, and every save refuses.
#pragma once

#include <cstdint>

#include "zone_impl.h"

namespace reheap::detail {

inline constexpr unsigned kForeignFreeHeapsTracked = 256;

void count_foreign_free(HeapId owner) noexcept;
// Frees ignored for `heap`, plus those the full table could not attribute to any heap.
std::uint64_t foreign_frees_of(HeapId heap) noexcept;
void forget_foreign_frees(HeapId heap) noexcept;

}  // namespace reheap::detail
