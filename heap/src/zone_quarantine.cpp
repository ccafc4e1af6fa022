// The zone's quarantine (zone_impl.h): chunks released by destroyed heaps wait here, oldest
// first, before another heap may take them, so that a stale pointer into a destroyed heap finds
// inaccessible (checked builds) or at least unowned memory, and the owner map names the heap that
// freed it. Leaving the quarantine makes a chunk accessible again.
#include <algorithm>

#include "os/memory.h"
#include "report.h"
#include "zone_impl.h"

namespace reheap::detail {

void ZoneImpl::compact_fifo_locked() noexcept {
  // Entries whose chunks were all taken back by restores (acquire_at) stay in the ring until
  // they reach its head; were the ring to fill with them, this drops them. Every entry kept speaks
  // for a waiting chunk no other entry speaks for, so room is left for the new one.
  std::size_t kept = 0;
  for (std::size_t n = 0; n < fifo_length_; ++n) {
    const QuarantinedRun run = fifo_[(fifo_head_ + n) % chunks_];
    bool waiting = false;
    for (std::size_t k = run.first; k < std::size_t{run.first} + run.count && !waiting; ++k) {
      waiting = holds(run, k);
    }
    if (waiting) fifo_[(fifo_head_ + kept++) % chunks_] = run;
  }
  fifo_length_ = kept;
}

void ZoneImpl::unquarantine_locked(std::size_t i) noexcept {
  const std::uintptr_t chunk = chunk_address(static_cast<std::uint32_t>(i));
  if (test(protected_, i)) {
    if (os::make_accessible(chunk, kChunkSize) != 0) {
      fatal("cannot make the zone's chunk at %#lx accessible again (mprotect failed)",
            static_cast<unsigned long>(chunk));
    }
    set_bits(protected_, i, 1, false);
    --protected_chunks_;
  } else if constexpr (kChecks) {
    // Past kMaxProtectedChunks a checked build's stale pointer could write here; the chunk's
    // next owner must find it zero. Release builds do not pay this second madvise per chunk (it
    // doubled the cost of a heap's create+destroy): there, as with any allocator, a write
    // through a stale pointer is undefined behaviour that nothing detects.
    os::discard(chunk, kChunkSize);
  }
  set_bits(quarantined_, i, 1, false);
  --quarantined_chunks_;
  --waiting_[i < class_chunks_ ? 0 : 1];
}

void ZoneImpl::evict_locked(std::size_t keep, int half) noexcept {
  // Oldest first. Entries whose chunks were taken back meanwhile (acquire_at) are skipped; with
  // `half` set, entries of the other half go back to the end of the ring.
  std::size_t visits = fifo_length_;
  while (quarantined_chunks_ > keep && fifo_length_ != 0 && visits-- != 0) {
    const QuarantinedRun run = fifo_[fifo_head_];
    fifo_head_ = (fifo_head_ + 1) % chunks_;
    --fifo_length_;
    const int h = run.first < class_chunks_ ? 0 : 1;
    if (half >= 0 && h != half) {
      fifo_[(fifo_head_ + fifo_length_) % chunks_] = run;
      ++fifo_length_;
      continue;
    }
    for (std::size_t k = run.first; k < std::size_t{run.first} + run.count; ++k) {
      if (!holds(run, k)) continue;  // taken back, or in quarantine again under a later entry
      unquarantine_locked(k);
      set_bits(used_, k, 1, false);
      if (k < hint_[h]) hint_[h] = k;
      if (k >= start_[h] && k < start_hint_[h]) start_hint_[h] = k;
    }
  }
}

std::size_t ZoneImpl::set_quarantine(std::size_t chunks) noexcept {
  std::lock_guard lock(mutex_);
  const std::size_t before = reserved() ? quarantine_limit_ : config_.quarantine_chunks;
  config_.quarantine_chunks = chunks;
  if (reserved()) {
    quarantine_limit_ = std::min(chunks, chunks_ / 8);
    evict_locked(quarantine_limit_, -1);
  }
  return before;
}

std::size_t ZoneImpl::quarantined() const noexcept {
  std::lock_guard lock(mutex_);
  return quarantined_chunks_;
}

}  // namespace reheap::detail
