// Heap: a single-threaded allocator whose every byte, its own metadata included, lies in a known
// set of 64 MiB chunks of the zone (see zone.h), at addresses that stay the same for its life.
//
// Four allocation classes, as in the reference design (Overload 146, "(Re)Actor Allocation at 15
// CPU Cycles"):
//   small   8 B .. 4 KiB   fixed-size blocks, half-exponent sizes (size_class.h)
//   medium  6 .. 16 KiB    the same mechanism, multi-page blocks
//   large   .. 1 MiB       page runs in the heap's large chunks, smallest adequate free run
//   huge    > 1 MiB        a dedicated run of chunks; on free kept for the next huge block, or
//                          given back to the OS (zone.h, "Retention")
// A block's class is read from its address bits alone (the 64 KiB "lane" it lies in), so freeing
// reads no per-object header and touches no cache line but the heap's free-list head.
//
// A heap is used by one thread at a time. Destroying it releases all of its memory at once,
// whatever objects are still live (region semantics). To make plain `new`/`delete` and the std
// containers use a heap, link reheap::global_new and make the heap current with HeapScope
// (heap_scope.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>

#include "reheap/build_config.h"  // refuses a REHEAP_CHECKS that differs from the libraries'
#include "reheap/size_class.h"

namespace reheap {

namespace detail {
struct HeapState;
}

inline constexpr std::size_t kUnlimited = std::numeric_limits<std::size_t>::max();

struct HeapConfig {
  // Upper bound on committed_bytes (see HeapStats). An allocation that would go past it fails:
  // allocate() returns null, `new` throws std::bad_alloc, and the heap stays usable.
  std::size_t limit_bytes = kUnlimited;
};

struct ClassStats {
  std::uint32_t block_size = 0;
  std::uint64_t live_blocks = 0;  // handed out and not freed
  std::uint64_t free_blocks = 0;  // carved, now on the free list
  // Free, in lanes whose pages were given back (Heap::purge_free_lanes); not in committed bytes.
  std::uint64_t purged_blocks = 0;
};

struct OsCallStats {
  std::uint64_t mprotect = 0;  // made zone chunks accessible on this heap's behalf, in this process
  std::uint64_t madvise = 0;   // gave pages back (huge frees, purges, destruction)
};

struct HeapStats {
  std::size_t reserved_bytes = 0;   // address space of the chunks the heap owns
  // Pages the heap has put in use, and those it keeps for reuse (free page runs, retained huge
  // blocks, purged or not): an upper bound on its RSS, and what its limit bounds.
  std::size_t committed_bytes = 0;
  std::size_t live_bytes = 0;       // usable bytes of all live blocks
  std::size_t live_blocks = 0;
  std::size_t limit_bytes = kUnlimited;
  std::size_t class_chunks = 0;
  std::size_t large_chunks = 0;     // chunks holding page runs or huge blocks
  std::array<ClassStats, kNumClasses> classes{};
  std::uint64_t large_live_blocks = 0;
  std::size_t large_live_bytes = 0;
  std::size_t large_free_bytes = 0;  // freed page runs kept for reuse
  std::uint64_t huge_live_blocks = 0;
  std::size_t huge_live_bytes = 0;
  // Freed huge blocks the heap keeps for reuse (zone.h, "Retention"): their runs, the bytes they
  // count in committed_bytes (header pages included), and the part of those not purged yet.
  std::uint64_t huge_retained_blocks = 0;
  std::size_t huge_retained_bytes = 0;
  std::size_t retained_resident_bytes = 0;
  std::uint64_t failed_allocations = 0;  // refused by the limit or by an exhausted zone
  // Frees of the heap's blocks that were ignored because another heap, or none, was current on
  // the freeing thread (release builds; checked builds abort). Not 0: the heap's saves are
  // refused, since an object in it may now point outside it (snapshot.h).
  std::uint64_t foreign_frees = 0;
  OsCallStats os;
};

class Heap;

struct HeapDeleter {
  void operator()(Heap* heap) const noexcept;
};

// Owning handle: destroying it destroys the heap and everything in it.
using HeapPtr = std::unique_ptr<Heap, HeapDeleter>;

class Heap {
 public:
  Heap(const Heap&) = delete;
  Heap& operator=(const Heap&) = delete;

  // Takes a chunk for the heap: a recycled one from the zone's heap cache when one is ready
  // (zone.h, "Recycling"), else a fresh one from the zone (reserving the zone on first use).
  // Either way the heap starts empty, its blocks zero-filled until reused. Throws
  // std::bad_alloc when the zone is full, std::system_error when the zone cannot be reserved.
  static HeapPtr create(const HeapConfig& config = {});

  // Releases every chunk of the heap. Pointers into it become invalid. If the heap is current
  // on this thread, the thread falls back to the system allocator. A heap whose first chunk is
  // small enough keeps that chunk, pages committed, in the zone's heap cache for a later
  // create() (zone.h, "Recycling"); its other chunks go back to the zone.
  static void destroy(Heap* heap) noexcept;

  // The live heap owning `p` (any address inside one of its chunks), or null. O(1).
  static Heap* owner_of(const void* p) noexcept;

  // Null when the request cannot be met (limit reached, zone exhausted, bad alignment).
  // Blocks of 16 bytes or more are 16-byte aligned; `alignment` must be a power of two.
  void* allocate(std::size_t size) noexcept;
  void* allocate(std::size_t size, std::size_t alignment) noexcept;

  // `p` must be null or a live block of this heap. Misuse is reported and aborts in builds with
  // REHEAP_CHECKS; otherwise a pointer this heap does not own is ignored.
  void deallocate(void* p) noexcept;

  // Like realloc(3): reallocate(nullptr, n) allocates, reallocate(p, 0) frees p and returns
  // null. Keeps the block when its size class already fits; grows page runs in place when the
  // pages after them are free. Returns null (leaving `p` valid) on failure.
  void* reallocate(void* p, std::size_t new_size) noexcept;

  // The usable size of the live block `p` (at least what was asked for).
  std::size_t usable_size(const void* p) const noexcept;

  bool owns(const void* p) const noexcept { return owner_of(p) == this; }

  // Statistics computed on request (walks the free lists: O(free blocks)).
  HeapStats stats() const noexcept;

  // The heap's number: stable for its life (and kept by a snapshot), never shared with another
  // heap of this process, live or destroyed, nor with a later heap in the same chunks: its low
  // 32 bits are its first chunk's index + 1, its high bits that chunk's generation.
  std::uint64_t id() const noexcept;

  // A user pointer kept in the heap's own metadata (e.g. the reactor object living in the heap),
  // so that it is saved and restored with the heap.
  void set_root(void* root) noexcept;
  void* root() const noexcept;

  std::size_t limit() const noexcept;
  void set_limit(std::size_t limit_bytes) noexcept;

  // Retention (zone.h, "Retention"): the bytes of freed huge blocks this heap keeps for reuse at
  // most (a new heap starts with RetainConfig::heap_bytes). Lowering it gives back at once what
  // is over it.
  std::size_t retain_limit() const noexcept;
  void set_retain_limit(std::size_t bytes) noexcept;
  // Gives back to the OS the pages of the freed huge blocks the heap keeps, now; the runs stay
  // the heap's, so no later address changes. Returns the bytes purged. Only on the heap's
  // thread, between uses.
  std::size_t purge_retained() noexcept;
  // Gives back to the OS the pages of the heap's free page runs (all but the first page of each,
  // which holds the run's links); the runs stay free and in place, so no later address changes,
  // and they still count in committed_bytes. Returns the bytes given back. Unlike
  // purge_retained, this changes bytes that used_pages_digest reads (freed memory now reads as
  // zero): the runtime does it only to reactors that are not recorded.
  std::size_t purge_free_runs() noexcept;
  // Gives back to the OS the pages of the size-class lanes none of whose blocks is live (a burst
  // of small objects, freed): their blocks leave the free lists, the lanes stay the heap's and
  // leave committed_bytes, and no live block moves. Allocations of the class take them back,
  // lowest first, once its free list is empty and before new address space, so later blocks may
  // come in another order than without the purge. Returns the bytes given back. Changes bytes
  // that used_pages_digest reads, like purge_free_runs. Only on the heap's thread, between uses.
  std::size_t purge_free_lanes() noexcept;

 private:
  Heap() = default;
  ~Heap() = default;
  friend struct detail::HeapState;
};

}  // namespace reheap
