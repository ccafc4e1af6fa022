// The heap cache: dying heaps the zone keeps, pages committed, for the heaps created next
// (zone.h, "Recycling").
//
// Data model: the zone holds a FIFO of cached first chunks (ZoneImpl::cache, under the zone
// lock, so any thread's Heap::create may take a heap any thread destroyed: a runtime creates a
// reactor's heap on the spawning thread and destroys it on the worker that ran it). A cached
// chunk's old state is zeroed but for a CachedHeap record (heap_cache.cpp) saying what the old
// heap touched. Invariants: an entry is reused only with more than HeapCacheConfig::delay entries
// behind it; after each caching the cache is trimmed to its bounds (heaps, bytes), an eighth
// below them, the chunks discarded outside the lock. Nothing here is thread_local, so a heap
// destroyed during a thread's exit or static destruction is cached or released like any other.
#pragma once

#include <cstdint>

#include "heap_state.h"

namespace reheap::detail {

// Keeps the dying heap `h` in the cache, releasing its chunks but the first (what discard_heap
// would do for those); false, having done nothing, when it does not qualify.
bool cache_heap(HeapState* h) noexcept;

// A cached heap ready for reuse: its state as a new heap's (a new id, no limit, nothing else
// set) but for recycled_dirty_end, the previous heap's reach; the rest of its header page zero.
// Null when none is ready.
HeapState* reuse_cached_heap() noexcept;

}  // namespace reheap::detail
