// Heap records: what this process knows about a live heap that is not part of the heap's state,
// and so lives in process memory, never in the heap's pages. A heap's records go when it is
// destroyed; a heap id names its first chunk and that chunk's generation, so a heap created later
// on a recycled chunk never inherits them (a heap restored under its old id starts with new ones).
//
// Foreign frees: frees of the heap's blocks that release builds ignored because the heap was not
// current on the freeing thread (report.h, Misuse::kNotCurrentHeap). Such a free is never
// legitimate, and it usually means more than a leaked block: the object that made it (a
// std::string assigned, a vector grown outside a HeapScope) now points outside its heap, so a
// snapshot would restore pointers that mean nothing. Saves refuse such a heap (snapshot.h), and
// HeapStats::foreign_frees shows the count. They are counted from the free path, which may not
// allocate: a fixed table, and past kForeignFreeHeapsTracked heaps at once further foreign frees
// are counted for no heap in particular, and every save refuses. A count is process memory also
// because a thread racing with the heap's destruction could otherwise write it into the next heap
// recycled there.
//
// Saved state: the id of the snapshot the heap's state was last saved as or restored from, which
// Snapshotter::attach checks its file against (an older file of the same heap would make the next
// increment restore a state that never existed).
#pragma once

#include <cstdint>
#include <optional>

#include "zone_impl.h"

namespace reheap::detail {

inline constexpr unsigned kForeignFreeHeapsTracked = 256;

void count_foreign_free(HeapId owner) noexcept;
// Frees ignored for `heap`, plus those the full table could not attribute to any heap.
std::uint64_t foreign_frees_of(HeapId heap) noexcept;

// Throws std::bad_alloc. Call with no heap current.
void note_saved_state(HeapId heap, std::uint64_t snapshot_id);
std::optional<std::uint64_t> saved_state_of(HeapId heap) noexcept;

void forget_heap_records(HeapId heap) noexcept;

}  // namespace reheap::detail
