// The zone's internals: the reservation, the chunk bitmap and the owner map.
//
// Chunks of each half are handed out lowest address first, and a half's pages are made
// accessible (mprotect) by advancing a frontier in steps of kProtectStep chunks, never taken back:
// released chunks are only discarded (madvise), so they read as zero when handed out again and
// the whole zone stays a handful of VMAs however many heaps come and go.
//
// The owner map is read without the lock on every free (relaxed atomics: a chunk changes owner
// only while no live block of it can be named), and written under the lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "layout.h"
#include "reheap/zone.h"

namespace reheap::detail {

// What the allocation fast paths read: constant once the zone is reserved.
struct ZoneBounds {
  std::atomic<std::uintptr_t> base{0};
  std::atomic<std::size_t> class_span{0};  // bytes in the class half
  std::atomic<std::size_t> size{0};
  std::atomic<std::atomic<std::uint32_t>*> owners{nullptr};
};
extern constinit ZoneBounds g_zone;

enum class Half { kClass, kLarge };

// Told before a heap gives chunks back, so that whoever watches the heap's pages (the snapshot
// write tracker) lets go of them before they are discarded and handed to another heap. Kept in
// the zone, by heap id, rather than in the heap: a process-local pointer has no place in the
// heap's saved state.
class ChunkObserver {
 public:
  virtual void chunks_released(std::uintptr_t first, std::size_t count) noexcept = 0;
  virtual void heap_destroyed() noexcept = 0;

 protected:
  ~ChunkObserver() = default;
};

class ZoneImpl {
 public:
  // Reserves the zone if that has not happened yet. Throws std::system_error on failure.
  void ensure_reserved();

  void configure(const ZoneConfig& config);
  bool reserved() const noexcept { return reserved_.load(std::memory_order_acquire); }
  ZoneStats stats() const noexcept;

  // Takes `count` contiguous free chunks of `half` for heap `owner` (0: a new heap whose id will
  // be the first chunk's index + 1). Returns the first chunk's address, or 0 if the half is full.
  // `*mprotect_calls` is increased by the OS calls made.
  std::uintptr_t acquire(Half half, std::size_t count, std::uint32_t owner,
                         std::uint64_t* mprotect_calls) noexcept;

  // Takes exactly the chunks [first, first + count) for heap `owner` (restoring a snapshot).
  // Returns false if any of them is in use or the run leaves its half of the zone.
  bool acquire_at(std::size_t first, std::size_t count, std::uint32_t owner,
                  std::uint64_t* mprotect_calls) noexcept;

  // Returns chunks to the zone. Their pages must already be discarded. `freed_by` (a heap id, or
  // 0) is left in the owner map as a tombstone until the chunks are reused, so that a second
  // free of a huge block is reported as a double free rather than as a stray address.
  void release(std::uintptr_t first, std::size_t count, std::uint32_t freed_by = 0) noexcept;

  // Owner-map entries with this bit set are tombstones: free chunks, last freed by the heap in
  // the other bits. Heap ids never have it.
  static constexpr std::uint32_t kTombstone = 0x80000000u;

  // The owner-map entry of the chunk holding `a` (0: never owned). `a` must lie in the zone.
  static std::uint32_t owner_of(std::uintptr_t a) noexcept {
    const std::uintptr_t base = g_zone.base.load(std::memory_order_relaxed);
    return g_zone.owners.load(std::memory_order_relaxed)[(a - base) >> kChunkShift].load(
        std::memory_order_relaxed);
  }
  static bool contains(std::uintptr_t a) noexcept {
    return a - g_zone.base.load(std::memory_order_relaxed) <
           g_zone.size.load(std::memory_order_relaxed);
  }
  static std::uintptr_t chunk_base(std::uintptr_t a) noexcept {
    const std::uintptr_t base = g_zone.base.load(std::memory_order_relaxed);
    return base + align_down(a - base, kChunkSize);
  }
  static std::uintptr_t chunk_address(std::uint32_t index) noexcept {
    return g_zone.base.load(std::memory_order_relaxed) + (std::uintptr_t{index} << kChunkShift);
  }

  // The observer of heap `id` (null: none). Read on the heap's own thread only when it releases
  // chunks; set by the observer's owner on that thread.
  ChunkObserver* observer(std::uint32_t id) const noexcept {
    return observers_[id - 1].load(std::memory_order_relaxed);
  }
  void set_observer(std::uint32_t id, ChunkObserver* o) noexcept {
    observers_[id - 1].store(o, std::memory_order_relaxed);
  }

  void count_ignored_free() noexcept { ignored_frees_.fetch_add(1, std::memory_order_relaxed); }
  void heap_created() noexcept { live_heaps_.fetch_add(1, std::memory_order_relaxed); }
  void heap_destroyed() noexcept { live_heaps_.fetch_sub(1, std::memory_order_relaxed); }

 private:
  static constexpr std::size_t kProtectStep = 64;  // chunks made accessible at once (4 GiB)

  void reserve_locked();
  bool make_accessible_locked(int half, std::size_t need_end, std::uint64_t* mprotect_calls) noexcept;
  void take_locked(int half, std::size_t first, std::size_t count, std::uint32_t owner) noexcept;
  bool run_is_free(std::size_t first, std::size_t count) const noexcept;
  void mark(std::size_t first, std::size_t count, bool used) noexcept;

  mutable std::mutex mutex_;
  std::atomic<bool> reserved_{false};
  ZoneConfig config_{};
  std::size_t chunks_ = 0;        // in the whole zone
  std::size_t class_chunks_ = 0;  // in the class half: [0, class_chunks_)
  std::uint64_t* used_ = nullptr;  // one bit per chunk
  std::atomic<ChunkObserver*>* observers_ = nullptr;  // by heap id - 1 (one per chunk)
  std::size_t hint_[2] = {0, 0};  // no free chunk below these indexes
  std::size_t accessible_end_[2] = {0, 0};
  std::size_t in_use_[2] = {0, 0};
  std::atomic<std::size_t> live_heaps_{0};
  std::atomic<std::size_t> ignored_frees_{0};
};

// The zone of the process. Constructed on first use and never destroyed, so that it outlives
// every static object whose destructor may still free heap memory.
ZoneImpl& zone() noexcept;

}  // namespace reheap::detail
