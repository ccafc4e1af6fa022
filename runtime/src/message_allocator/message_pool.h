// Pool: one thread's part of the message allocator.
//
// A pool has, per size class, a bin: two lists of free blocks the thread may hand out, and the
// class's current slab, which refills them. `free` is what the allocation fast path pops;
// `freed` is what the free fast path pushes, whoever allocated the block, up to a limit (about
// 32 KiB of blocks); past it the slow path gives the `freed` blocks back to their slabs, one
// atomic operation per run of blocks of the same slab. When `free` runs dry, `freed` becomes
// `free` first, then the current slab refills it. So a block that goes back and forth between
// two threads is reused by whichever thread freed it, with no atomic operation at all, and a
// consumer that only frees returns blocks to their owner in batches.
//
// A pool owns its slabs until they are entirely free and given back to the arena. Only the
// thread the pool is attached to touches its bins and its slabs' owner fields; the one field
// other threads write is `returned`, on a cache line of its own.
//
// Pools live in memory mapped for them and are never unmapped. A thread gets one on its first
// allocation or free, by adopting an orphaned pool if there is one, else a new one; at thread
// exit the pool gives its bins back, releases its free slabs and becomes orphaned, with its
// remaining slabs. Orphaned pools are touched only under the registry's lock (by a thread
// adopting one, or by trim()).
//
// The thread's pool pointer starts at g_empty_pool, whose bins are always empty and whose
// limits are zero, so neither fast path needs a null test: the first allocation and the first
// free of a thread fall into the slow paths, which attach a real pool.
#pragma once

#include <atomic>
#include <cstdint>

#include "message_allocator/message_build.h"
#include "message_allocator/message_size_class.h"
#include "message_allocator/message_slab.h"

namespace reheap::detail::msg {

// A statistic with a single writer at any time (the owning thread, or the holder of the
// registry lock for an orphaned pool) and racing readers (stats()): a relaxed atomic written
// with load + store, not a locked read-modify-write.
struct Counter {
  std::atomic<std::uint64_t> value{0};
  void add(std::uint64_t n) noexcept {
    value.store(value.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  void sub(std::uint64_t n) noexcept { add(~n + 1); }
  std::uint64_t get() const noexcept { return value.load(std::memory_order_relaxed); }
};

struct Bin {
  Block* free = nullptr;     // popped by allocation
  Block* freed = nullptr;    // pushed by deallocation; becomes `free` when that runs dry
  std::uint32_t freed_count = 0;
  std::uint32_t limit = 0;   // freed_count at which the slow path gives `freed` back
  Slab* slab = nullptr;      // the class's current slab, or null
};

// How many freed blocks a bin keeps before giving them back: about 32 KiB worth, at least 4.
constexpr std::uint32_t bin_limit(unsigned cls) noexcept {
  const std::uint32_t n = 32 * 1024 / kBlockSize[cls];
  return n < 4 ? 4 : n > 512 ? 512 : n;
}

struct alignas(64) Pool {
  // The fast path's lists; bins[kLargeClass] stays empty so large requests take the slow path.
  Bin bins[kNumClasses + 1];

  // Slow-path state, owner only.
  Slab* partial[kNumClasses] = {};
  Slab* owned = nullptr;  // every slab of the pool, current, partial and full

  // Statistics, single writer (see Counter).
  Counter slabs;         // slabs owned
  Counter out_bytes;     // bytes of blocks carved and not known free (MessageAllocatorStats)
  Counter local_frees;   // collected frees by the owning thread
  Counter remote_frees;  // collected frees by other threads
  Counter refills;       // slow-path refills

  // Registry links, under the registry lock (next_pool is immutable once published).
  Pool* next_pool = nullptr;
  Pool* next_orphan = nullptr;

  // Full slabs handed back by the thread that first freed into them (see message_slab.h).
  alignas(64) std::atomic<Slab*> returned{nullptr};
};

// Constant-initialized and trivially destructible: readable at any moment of a thread's life.
extern constinit Pool g_empty_pool;
extern constinit thread_local Pool* t_pool [[gnu::tls_model("initial-exec")]];

// ---- message_refill.cpp: a bin's slow path ----------------------------------------------------

// Refills the bin of `cls` and returns a block popped from it, or null when no memory is left.
Block* refill(Pool* pool, unsigned cls) noexcept;

// Gives a list of free blocks back to their slabs: blocks of slabs `pool` lists go on their
// local lists, the others on their slabs' remote lists, one CAS per run of the same slab.
// `pool` may be null (a thread without a pool): then every block takes the remote path.
void give_back(Pool* pool, Block* list) noexcept;

// Moves the slabs handed back through `returned` onto their partial lists (or back to the arena
// if entirely free).
void take_returned(Pool* pool) noexcept;

// Gives back every entirely free slab of `pool` (to the OS if `to_os`, else to the arena's
// cache), after returning the bins' lists to their slabs and collecting all frees.
void trim_pool(Pool* pool, bool to_os) noexcept;

// ---- message_pool.cpp: pools and threads ------------------------------------------------------

// The calling thread's pool, attached on first use; null when no memory for a pool is left, or
// when the thread is past its exit hook and `for_free` (a free then needs no pool).
Pool* attach_pool(bool for_free) noexcept;

// Trims every orphaned pool (under the registry lock).
void trim_orphans() noexcept;

// Visits every pool ever made (for statistics); f(const Pool&).
template <typename F>
void for_each_pool(F&& f) noexcept;

Pool* first_pool() noexcept;
std::size_t orphaned_pool_count() noexcept;
std::uint64_t adopted_slab_count() noexcept;

template <typename F>
void for_each_pool(F&& f) noexcept {
  for (const Pool* p = first_pool(); p != nullptr; p = p->next_pool) f(*p);
}

}  // namespace reheap::detail::msg
