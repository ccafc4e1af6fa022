// The zone's heap cache (zone_impl.h, "Heap recycling"; heap_cache.h is the policy above it): a
// FIFO ring of dying heaps' first class chunks, kept committed and tombstoned in the owner map, so
// that the next Heap::create takes one without a system call.
#include <algorithm>

#include "zone_impl.h"

namespace reheap::detail {

ZoneImpl::Cached ZoneImpl::cache(std::uintptr_t chunk, HeapId freed_by, std::size_t retained_bytes,
                                  std::size_t heaps, std::size_t bytes) noexcept {
  const std::size_t index = (chunk - config_.base) >> kChunkShift;
  std::lock_guard lock(mutex_);
  // Callers trim the cache to at most kMaxCachedHeaps entries after each caching; only callers
  // racing to cache between those trims can find the ring full.
  if (cache_length_ == kMaxCachedHeaps + 1) return Cached::kNoRoom;
  // A held chunk must not be handed to the next Heap::create: it goes to the quarantine.
  if (test(held_, index)) return Cached::kNoRoom;
  g_zone.owners.load(std::memory_order_relaxed)[index].store(freed_by | kTombstone, std::memory_order_relaxed);
  // At least the header page: a chunk with retained pages is a cached one (cached()).
  const std::size_t pages = std::max<std::size_t>(retained_bytes >> kPageShift, 1);
  retained_pages_[index] = static_cast<std::uint32_t>(pages);
  ++cached_chunks_;
  retained_.fetch_add(pages << kPageShift, std::memory_order_relaxed);
  --in_use_[0];
  cache_ring_[(cache_head_ + cache_length_++) % (kMaxCachedHeaps + 1)] = {
      static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(pages)};
  const bool over = cache_length_ > std::min(heaps, kMaxCachedHeaps) ||
                    retained_.load(std::memory_order_relaxed) > bytes;
  return over ? Cached::kOverBound : Cached::kYes;
}

ZoneImpl::CachedChunk ZoneImpl::pop_cache_head_locked() noexcept {
  const CachedChunk e = cache_ring_[cache_head_];
  cache_head_ = (cache_head_ + 1) % (kMaxCachedHeaps + 1);
  --cache_length_;
  return e;
}

void ZoneImpl::uncache_locked(std::size_t i) noexcept {
  --cached_chunks_;
  retained_.fetch_sub(std::size_t{retained_pages_[i]} << kPageShift, std::memory_order_relaxed);
  retained_pages_[i] = 0;
  ++in_use_[0];
}

std::uintptr_t ZoneImpl::reuse(std::size_t delay, HeapId* id, std::uintptr_t* next) noexcept {
  std::lock_guard lock(mutex_);
  *next = 0;
  while (cache_length_ > delay) {
    const std::size_t i = pop_cache_head_locked().chunk;
    if (!cached(i)) continue;  // a restore took it
    uncache_locked(i);
    generation_[i] = (generation_[i] + 1) & 0x7fffffffu;  // as in acquire
    if (generation_[i] == 0) generation_[i] = 1;
    *id = make_heap_id(static_cast<std::uint32_t>(i), generation_[i]);
    if (test(restored_, i)) set_bits(restored_, i, 1, false);  // else no write: the word is shared
    g_zone.owners.load(std::memory_order_relaxed)[i].store(*id, std::memory_order_relaxed);
    if (cache_length_ > delay) *next = chunk_address(cache_ring_[cache_head_].chunk);
    return chunk_address(static_cast<std::uint32_t>(i));
  }
  return 0;
}

std::size_t ZoneImpl::pop_cached(std::size_t keep_heaps, std::size_t keep_bytes, CachedChunk* out,
                                 std::size_t capacity) noexcept {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  while (n < capacity && cache_length_ != 0 &&
         (cache_length_ > keep_heaps || retained_.load(std::memory_order_relaxed) > keep_bytes)) {
    const CachedChunk e = pop_cache_head_locked();
    if (!cached(e.chunk)) continue;  // a restore took it
    uncache_locked(e.chunk);
    out[n++] = e;
  }
  return n;
}

}  // namespace reheap::detail
