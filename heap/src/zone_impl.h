// The zone's internals: the reservation, the chunk bitmap and the owner map.
//
// Chunks of each half are handed out first fit from the node's start (zone.h, "Slices"), and a half's pages are made
// accessible (mprotect) by advancing a frontier in steps of kProtectStep chunks, never taken back:
// released chunks are only discarded (madvise), so they read as zero when handed out again and
// the whole zone stays a handful of VMAs however many heaps come and go.
//
// The owner map is read without the lock on every free (relaxed atomics: a chunk changes owner
// only while no live block of it can be named), and written under the lock.
//
// Heap ids and stale pointers. An id names one heap for its whole life and never a later heap in
// the same place: its low 32 bits are the index of the heap's first chunk + 1 (where its state
// lives), its bits 32..62 a generation that the zone increments each time a heap is created at
// that chunk. Chunks a heap gives back are not handed out again at once: they wait in a FIFO
// quarantine (ZoneConfig::quarantine_chunks), their owner-map entry a tombstone naming the heap
// that gave them back, so that a stale pointer into them is recognised for what it is (a free
// through it is reported, or ignored and counted; in checked builds the chunks are also made
// inaccessible, and an access is reported naming the destroyed heap). Only when the quarantine
// is full (oldest first), a request can be met only with quarantined chunks (exactly those), or
// a restore needs exactly that chunk, does a quarantined chunk become usable again.
//
// Held chunks (zone.h, "Held for restore"). A second bitmap marks the chunks that saved snapshots
// of the node still name, with a count per chunk (several files may name one). The first-fit
// search treats a held chunk as used whatever else is true of it (free, in quarantine), and the
// heap cache refuses one; acquire_at, the restore's door, ignores the mark. The holds come from
// the registry (snapshot/snapshot_registry.h), read at the reservation, and from the saves of the
// process; the zone only counts them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "layout.h"
#include "reheap/internal/brief_lock.h"
#include "reheap/zone.h"

namespace reheap {
class ChunkPlacement;
}

namespace reheap::detail {

// What the allocation fast paths read: constant once the zone is reserved.
struct ZoneBounds {
  std::atomic<std::uintptr_t> base{0};
  std::atomic<std::size_t> class_span{0};  // bytes in the class half
  std::atomic<std::size_t> size{0};
  std::atomic<std::atomic<std::uint64_t>*> owners{nullptr};
};
extern constinit ZoneBounds g_zone;

// Heap ids (see above). Bit 63 is never set in an id: the owner map uses it for tombstones.
using HeapId = std::uint64_t;
inline constexpr HeapId kTombstone = HeapId{1} << 63;
inline constexpr HeapId kNoHeapId = ~HeapId{0};  // the no-heap state's id: matches no entry
constexpr HeapId make_heap_id(std::uint32_t first_chunk, std::uint32_t generation) noexcept {
  return (HeapId{generation & 0x7fffffffu} << 32) | (HeapId{first_chunk} + 1);
}
constexpr std::uint32_t first_chunk_of(HeapId id) noexcept {
  return static_cast<std::uint32_t>(id) - 1;
}
constexpr std::uint32_t generation_of(HeapId id) noexcept {
  return static_cast<std::uint32_t>((id & ~kTombstone) >> 32);
}

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
  // Sets only the range (a restore reserving the zone where its snapshot was saved).
  void configure_range(std::uintptr_t base, std::size_t size);
  bool reserved() const noexcept { return reserved_.load(std::memory_order_acquire); }
  ZoneStats stats() const noexcept;

  // Takes `count` contiguous free chunks of `half` for heap `owner` (0: a new heap, whose id is
  // made from the first chunk's index and its next generation). Returns the first chunk's
  // address, or 0 if the half is full. First fit from the half's start chunk (the node's slice),
  // wrapping around; chunks waiting in quarantine are used only when no run of free ones fits
  // anywhere in the half. The search is O(used and free regions of the half) and never walks
  // chunk by chunk. `*mprotect_calls` is increased by the OS calls made.
  std::uintptr_t acquire(Half half, std::size_t count, HeapId owner,
                         std::uint64_t* mprotect_calls) noexcept;

  // Takes exactly the chunks [first, first + count) for heap `owner` (restoring a snapshot).
  // A chunk is available if it is free or waits in quarantine (a snapshot needs exactly its own
  // chunks, so the quarantine gives way). Returns false if any of them is owned by a heap or the
  // run leaves its half of the zone.
  bool acquire_at(std::size_t first, std::size_t count, HeapId owner,
                  std::uint64_t* mprotect_calls) noexcept;

  // Returns chunks to the zone, through the quarantine. Their pages must already be discarded.
  // `freed_by` (the heap id giving them back) stays in the owner map as a tombstone until the
  // chunks are reused, so that a free through a stale pointer is told apart from a stray address
  // (and a second free of a huge block is reported as a double free).
  void release(std::uintptr_t first, std::size_t count, HeapId freed_by) noexcept;

  // The owner-map entry of the chunk holding `a` (0: never owned; kTombstone | id: given back by
  // heap id). `a` must lie in the zone.
  static HeapId owner_of(std::uintptr_t a) noexcept {
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
  ChunkObserver* observer(HeapId id) const noexcept {
    return observers_[first_chunk_of(id)].load(std::memory_order_relaxed);
  }
  void set_observer(HeapId id, ChunkObserver* o) noexcept {
    observers_[first_chunk_of(id)].store(o, std::memory_order_relaxed);
  }

  // Heap recycling (heap_cache.h). A dying heap's first class chunk can wait in the zone's heap
  // cache, a FIFO, instead of being released: `cache` tombstones it in the owner map (a free
  // through a stale pointer is told apart as after `release`) without discarding its pages, which
  // stay committed (`retained_bytes`); it says whether the cache is now past a bound (`heaps`
  // entries, `bytes`), or had no room. `reuse` takes the oldest cached chunk that has more than `delay` entries
  // behind it and returns its address, `*id` the new heap's (the next generation there), or 0.
  // `pop_cached` ends the caching of the oldest chunks while more than `keep_heaps` entries or
  // `keep_bytes` wait, at most `capacity` of them, for the caller to discard and `release`.
  // A restore may take a cached chunk (acquire_at discards its pages first); its entry is then
  // skipped when it reaches the head.
  struct CachedChunk {
    std::uint32_t chunk;  // zone index
    std::uint32_t pages;  // committed when cached
  };
  static constexpr std::size_t kMaxCachedHeaps = 4096;
  enum class Cached { kYes, kOverBound, kNoRoom };  // kNoRoom: not cached, nothing changed
  Cached cache(std::uintptr_t chunk, HeapId freed_by, std::size_t retained_bytes, std::size_t heaps,
               std::size_t bytes) noexcept;
  // `*next`: the chunk the following reuse would take if nothing changes before it (0: none), for
  // the caller to prefetch.
  std::uintptr_t reuse(std::size_t delay, HeapId* id, std::uintptr_t* next) noexcept;
  std::size_t pop_cached(std::size_t keep_heaps, std::size_t keep_bytes, CachedChunk* out,
                         std::size_t capacity) noexcept;
  std::size_t retained_bytes() const noexcept { return retained_.load(std::memory_order_relaxed); }

  // Retention's record of a live heap (retention.cpp), by its first chunk: which of its retained
  // runs still hold resident pages. Kept here, in process memory, rather than in the heap:
  // purging is decided by time, and nothing time decides may reach the pages a snapshot or a
  // digest reads. Used only on the heap's own thread; a record speaks for `heap` only, so a
  // heap created or restored at the chunk starts with none resident.
  struct Residency {
    HeapId heap;
    std::uint64_t purged_through;  // retained runs whose retained_seq is at most this are purged
    std::uint64_t since_ms;        // when the oldest resident run was kept (0: none resident)
    std::uint64_t purge_calls;     // madvise calls made purging
  };
  Residency& residency(HeapId id) noexcept { return residency_[first_chunk_of(id)]; }
  // The process's side of a live heap's chunk taking (chunk_taking.cpp), by its first chunk: the
  // mprotect calls made for it, which depend on how far this process's zone has made its halves
  // accessible and so stay out of the heap's pages (snapshots and digests read those), and the
  // placement that watches or steers where its new chunks go (reheap/chunk_placement.h). Used
  // only on the heap's own thread; a record speaks for `heap` only, so a heap created or restored
  // at the chunk starts with none.
  struct ChunkTaking {
    HeapId heap;
    std::uint64_t mprotect_calls;
    ChunkPlacement* placement;
  };
  ChunkTaking& taking(HeapId id) noexcept { return taking_[first_chunk_of(id)]; }
  // Chunks [first, first + count) lie in half `h`'s range of the zone.
  bool in_half(Half h, std::size_t first, std::size_t count) const noexcept;

  // Zone-wide: the bytes of retained blocks still resident, in every heap.
  std::size_t retained_resident() const noexcept { return resident_.load(std::memory_order_relaxed); }
  std::size_t add_resident(std::size_t bytes) noexcept {
    return resident_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  }
  void sub_resident(std::size_t bytes) noexcept { resident_.fetch_sub(bytes, std::memory_order_relaxed); }

  // Held for restore (zone.h, "Held for restore"): chunks that snapshot files of this node still
  // name, counted per chunk (a chunk may be named by several files). A held chunk is never handed
  // to a new heap or a growing one; a restore takes it (acquire_at) as it takes any chunk no live
  // heap owns. A heap that gives a held chunk back leaves it held. Holding a chunk that waits in
  // the heap cache ends its caching (its pages are discarded). Runs must lie in the zone.
  void hold(std::size_t first, std::size_t count) noexcept;
  void unhold(std::size_t first, std::size_t count) noexcept;

  // Chunks waiting in quarantine (tests and statistics).
  std::size_t quarantined() const noexcept;
  std::size_t set_quarantine(std::size_t chunks) noexcept;

  // Whether live heap `id` was restored from a snapshot in this process (else created here).
  bool restored_here(HeapId id) const noexcept;
  // Records that live heap `id` came from a snapshot (restore_replacing adopts the chunks of the
  // heap it replaces without acquire_at, which records it otherwise).
  void mark_restored(HeapId id) noexcept;

  void count_ignored_free() noexcept { ignored_frees_.fetch_add(1, std::memory_order_relaxed); }
  void heap_created() noexcept { live_heaps_.fetch_add(1, std::memory_order_relaxed); }
  void heap_destroyed() noexcept { live_heaps_.fetch_sub(1, std::memory_order_relaxed); }

 private:
  static constexpr std::size_t kProtectStep = 64;  // chunks made accessible at once (4 GiB)
  // Checked builds make quarantined chunks inaccessible while fewer than this many are: each run
  // of them may split the zone's mapping, and vm.max_map_count (65530 by default) must keep room.
  static constexpr std::size_t kMaxProtectedChunks = 8192;

  // One release into the quarantine. A chunk can leave it (a restore takes it back) and enter it
  // again before the old entry reaches the ring's head; `release` tells the entries apart: the
  // entry speaks for chunk k only while released_[k] == release.
  struct QuarantinedRun {
    std::uint32_t first;
    std::uint32_t count;
    std::uint32_t release;
  };
  bool holds(const QuarantinedRun& run, std::size_t k) const noexcept {
    return test(quarantined_, k) && released_[k] == run.release;
  }

  void reserve_locked();
  // One chunk held more, or less (see hold()).
  void hold_locked(std::size_t k) noexcept;
  void unhold_locked(std::size_t k) noexcept;
  // Returns chunks to the quarantine (see release()).
  void release_locked(std::size_t index, std::size_t count, HeapId freed_by) noexcept;
  // Says on stderr, once per half, that held chunks pushed new heaps out of the node's slice, or
  // left a request for `count` chunks unmet.
  [[gnu::noinline, gnu::cold]] void report_held_locked(int h, std::size_t count, bool unmet) noexcept;
  bool make_accessible_locked(int half, std::size_t need_end, std::uint64_t* mprotect_calls) noexcept;
  void take_locked(int half, std::size_t first, std::size_t count, HeapId owner) noexcept;
  // Where new heaps of this process start their search in each half (zone.h, "Slices").
  void place_locked(std::uint32_t node, std::uint32_t incarnation) noexcept;
  // First fit for `count` chunks of half `h`: from start_[h] to the end of the node's slice, then
  // the slice before start_[h], then the rest of the half (zone.h, "Slices"); the half's end if
  // none fits. Held chunks are never part of a fit. Without `or_waiting`, the hints skip what is
  // known to be used.
  std::size_t find_wrapped(int h, std::size_t count, bool or_waiting) const noexcept;
  // The first run of `count` chunks in [from, end) that are free (or free or waiting in
  // quarantine, `or_waiting`) and not held; `end` if there is none.
  std::size_t find_free_run(std::size_t from, std::size_t end, std::size_t count, bool or_waiting) const noexcept;
  static bool test(const std::uint64_t* bits, std::size_t i) noexcept {
    return (bits[i / 64] >> (i % 64)) & 1;
  }
  static void set_bits(std::uint64_t* bits, std::size_t first, std::size_t count, bool value) noexcept;
  // Whether chunk `i` waits in the heap cache: a cached chunk keeps at least its header page.
  bool cached(std::size_t i) const noexcept { return i < class_chunks_ && retained_pages_[i] != 0; }
  // Ends the caching of chunk `i` (it must be cached), leaving it marked used.
  void uncache_locked(std::size_t i) noexcept;
  CachedChunk pop_cache_head_locked() noexcept;
  // Ends the quarantine of chunk `i` (it must be in quarantine): makes it accessible again. The
  // chunk stays marked used.
  void unquarantine_locked(std::size_t i) noexcept;
  // Frees the oldest quarantined runs while more than `keep` chunks wait, or of `half` only
  // (-1: both) until none of it waits.
  void evict_locked(std::size_t keep, int half) noexcept;
  void compact_fifo_locked() noexcept;

  // On one line: the lock and what every spawn and stop changes under it (the heap cache's ring
  // and counts, the chunks in use), so that a thread taking the lock finds them in the same line.
  alignas(64) mutable BriefLock mutex_;
  std::size_t cache_head_ = 0;
  std::size_t cache_length_ = 0;           // entries, taken ones included until they reach the head
  std::size_t cached_chunks_ = 0;          // entries still cached
  std::atomic<std::size_t> retained_{0};   // committed bytes of the cached chunks
  std::size_t in_use_[2] = {0, 0};
  alignas(64) std::atomic<bool> reserved_{false};
  ZoneConfig config_{};
  std::size_t chunks_ = 0;        // in the whole zone
  std::size_t class_chunks_ = 0;  // in the class half: [0, class_chunks_)
  std::uint64_t* used_ = nullptr;         // one bit per chunk: owned, or in quarantine
  std::uint64_t* quarantined_ = nullptr;  // one bit per chunk: in quarantine
  std::uint64_t* protected_ = nullptr;    // one bit per chunk: made inaccessible in quarantine
  std::uint32_t* generation_ = nullptr;   // by class chunk: the last heap generation created there
  std::uint32_t* released_ = nullptr;     // by chunk: the release that last put it in quarantine
  std::uint64_t* restored_ = nullptr;     // one bit per chunk: a restored heap's first chunk
  std::uint32_t* retained_pages_ = nullptr;  // by class chunk, while cached: its committed pages
  std::uint64_t* held_ = nullptr;          // one bit per chunk: held for restore
  std::uint32_t* hold_counts_ = nullptr;   // by chunk: the holds on it (files naming it)
  std::size_t held_chunks_ = 0;
  std::size_t held_in_slice_[2] = {0, 0};  // held chunks in the node's slice of each half
  bool held_reported_[2][2] = {{false, false}, {false, false}};  // by half: spilled, unmet
  CachedChunk* cache_ring_ = nullptr;      // kMaxCachedHeaps + 1 entries, oldest at cache_head_
  std::uint32_t releases_ = 0;
  QuarantinedRun* fifo_ = nullptr;        // ring of quarantined runs, oldest at fifo_head_
  std::size_t fifo_head_ = 0;
  std::size_t fifo_length_ = 0;
  std::size_t quarantine_limit_ = 0;      // chunks
  std::size_t quarantined_chunks_ = 0;
  std::size_t waiting_[2] = {0, 0};       // quarantined chunks by half
  std::size_t protected_chunks_ = 0;
  std::atomic<ChunkObserver*>* observers_ = nullptr;  // by the heap's first chunk (one per chunk)
  Residency* residency_ = nullptr;         // by class chunk: a heap's first chunk
  ChunkTaking* taking_ = nullptr;          // by class chunk: a heap's first chunk
  std::atomic<std::size_t> resident_{0};   // retained bytes still resident, zone-wide
  std::size_t hint_[2] = {0, 0};  // no free chunk below these indexes
  std::uint32_t node_ = 0;  // the process's node id
  std::size_t slice_[2][2] = {{0, 0}, {0, 0}};  // the node's slice of each half: [begin, end)
  std::size_t start_[2] = {0, 0};  // where searches start: the node's slice, incarnation's window
  std::size_t start_hint_[2] = {0, 0};  // no free chunk in [start_, start_hint_)
  std::size_t accessible_end_[2] = {0, 0};
  alignas(64) std::atomic<std::size_t> live_heaps_{0};
  std::atomic<std::size_t> ignored_frees_{0};
};

// The zone of the process. Constructed on first use and never destroyed, so that it outlives
// every static object whose destructor may still free heap memory.
ZoneImpl& zone() noexcept;

}  // namespace reheap::detail
