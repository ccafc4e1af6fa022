// The heap cache: dying heaps a thread keeps, pages committed, for the heaps it creates next
// (zone.h, "Recycling").
//
// Data model: one FIFO ring per thread of cached first chunks (zone index and committed pages),
// mapped on the thread's first caching and unmapped at its exit. A cached chunk's old state is
// replaced by a CachedHeap record (heap_cache.cpp) saying what the old heap touched; the zone
// knows the chunk as cached (ZoneImpl::cache) and may hand it to a restore, in which case the
// ring's entry is dropped when it reaches the head. Invariants: an entry is reused only with more
// than HeapCacheConfig::delay entries behind it; the ring holds at most HeapCacheConfig::heaps
// entries and bytes after each caching. The thread's exit (and static destruction after it)
// empties the cache and closes it: later destroys on the thread release heaps as without a cache.
#pragma once

#include <cstdint>

#include "heap_state.h"

namespace reheap::detail {

// Keeps the dying heap `h` in the calling thread's cache, releasing its chunks but the first
// (what discard_heap would do for those); false, having done nothing, when it does not qualify.
bool cache_heap(HeapState* h) noexcept;

// A cached chunk ready for a new heap: its header page cleared, `*id` the new heap's id, and
// `dirty_end` (kNumClasses entries) the previous heap's reach (HeapState::recycled_dirty_end).
// 0 when the thread's cache has none ready.
std::uintptr_t reuse_cached_heap(HeapId* id, std::uint32_t* dirty_end) noexcept;

}  // namespace reheap::detail
