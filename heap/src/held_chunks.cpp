// Held for restore (zone.h): the chunks saved snapshots of the node still name, counted per chunk,
// kept out of every first-fit search, and what the zone says when they crowd new heaps out.
// The holds themselves come from snapshot/snapshot_registry.cpp.
#include <algorithm>
#include <cstdio>

#include "os/memory.h"
#include "report.h"
#include "zone_impl.h"

namespace reheap::detail {

void ZoneImpl::hold(std::size_t first, std::size_t count) noexcept {
  std::lock_guard lock(mutex_);
  if (!reserved() || first >= chunks_ || count > chunks_ - first) return;
  for (std::size_t k = first; k < first + count; ++k) hold_locked(k);
}

void ZoneImpl::unhold(std::size_t first, std::size_t count) noexcept {
  std::lock_guard lock(mutex_);
  if (!reserved() || first >= chunks_ || count > chunks_ - first) return;
  for (std::size_t k = first; k < first + count; ++k) unhold_locked(k);
}

void ZoneImpl::hold_locked(std::size_t k) noexcept {
  if (hold_counts_[k]++ != 0) return;
  set_bits(held_, k, 1, true);
  ++held_chunks_;
  const int h = k < class_chunks_ ? 0 : 1;
  if (k >= slice_[h][0] && k < slice_[h][1]) ++held_in_slice_[h];
  if (cached(k)) {
    // A cached heap's chunk is reused by the next Heap::create: it waits in the quarantine
    // instead, its pages discarded, as a released heap's would. The cache skips its entry.
    const std::uintptr_t chunk = chunk_address(static_cast<std::uint32_t>(k));
    if (os::discard(chunk, kChunkSize) != 0) {
      fatal("madvise(MADV_DONTNEED) of the cached chunk at %#lx failed", static_cast<unsigned long>(chunk));
    }
    const HeapId old_id = g_zone.owners.load(std::memory_order_relaxed)[k].load(std::memory_order_relaxed);
    uncache_locked(k);
    release_locked(k, 1, old_id & ~kTombstone);
  }
}

void ZoneImpl::unhold_locked(std::size_t k) noexcept {
  if (hold_counts_[k] == 0 || --hold_counts_[k] != 0) return;
  set_bits(held_, k, 1, false);
  --held_chunks_;
  const int h = k < class_chunks_ ? 0 : 1;
  if (k >= slice_[h][0] && k < slice_[h][1]) --held_in_slice_[h];
  if (!test(used_, k)) {  // free again: the searches' hints must not skip it
    if (k < hint_[h]) hint_[h] = k;
    if (k >= start_[h] && k < start_hint_[h]) start_hint_[h] = k;
  }
}

void ZoneImpl::report_held_locked(int h, std::size_t count, bool unmet) noexcept {
  held_reported_[h][unmet ? 1 : 0] = true;
  // Counted chunk by chunk: this runs once per half and process.
  const std::size_t from = unmet ? (h == 0 ? 0 : class_chunks_) : slice_[h][0];
  const std::size_t to = unmet ? (h == 0 ? class_chunks_ : chunks_) : slice_[h][1];
  std::size_t used = 0;
  std::size_t held = 0;
  for (std::size_t k = from; k < to; ++k) {
    held += test(held_, k);
    used += test(used_, k) && !test(held_, k);
  }
  const char* half = h == 0 ? "class" : "large";
  if (unmet) {
    std::fprintf(stderr,
                 "reheap: the zone's %s half has no room for %zu more chunk(s): %zu of its chunks are "
                 "held for restoring snapshots this node saved (listed in its state directory), %zu "
                 "are in use; the heap cannot grow. Delete snapshots no longer needed "
                 "(reheap::remove_snapshot) or give the zone more room (REHEAP_ZONE_SIZE)\n",
                 half, count, held, used);
  } else {
    std::fprintf(stderr,
                 "reheap: node %u's slice of the zone's %s half is full (%zu of its %zu chunks in use, "
                 "%zu held for restoring snapshots this node saved): new heaps now take chunks from "
                 "other nodes' slices, where snapshots of other nodes may need them. Delete snapshots "
                 "no longer needed (reheap::remove_snapshot) or give the zone more room "
                 "(REHEAP_ZONE_SIZE)\n",
                 node_, half, used, to - from, held);
  }
}

}  // namespace reheap::detail
