// MessageAllocator: the memory of messages, which one thread allocates and another frees.
//
// Data model. Blocks of up to 32 KiB come from size classes (16-byte steps to 128 B, then four
// classes per doubling); each class block lives in a 256 KiB *slab* that holds blocks of one
// class only and starts with a header naming its class and its owning *pool*. Slabs are carved
// from one reserved range of address space (the arena), so `deallocate` finds the header from
// the address alone (p rounded down to 256 KiB) and knows a pointer is a message block by one
// range check. Larger blocks are mapped from the OS one by one and found in a registry.
//
// Ownership. Every thread that allocates or frees gets a pool: per size class, a cache of free
// blocks (any thread's) and the slabs it carves from. Only the owning thread carves from a slab
// and takes its lists. A free pushes the block on the freeing thread's cache, whoever allocated
// it, so neither fast path touches an atomic, and a block passed back and forth between two
// threads is simply reused. A cache past its limit (about 32 KiB) gives its blocks back to their
// slabs in runs: onto the slab's local list if the pool owns it, else onto the slab's atomic
// remote list (lock-free, one CAS per run), which the owner takes whole when it runs dry. A slab
// with nothing left to hand out is marked full and dropped from its owner's lists; the first
// block given back to it hands it back to the owner, so a pool never polls its slabs.
//
// Lifetime. Pools, slabs and the arena come from mmap, never from operator new or malloc, so no
// reactor heap that is current on the thread is ever touched, and they are never unmapped. A
// thread's exit (pthread key destructor) gives its cached blocks and fully free slabs back and
// leaves its pool *orphaned*: every block in it stays valid, frees from other threads keep
// working, and the next new thread adopts the orphaned pool with its slabs. The pool pointer is
// a constant-initialized, trivially destructible thread_local, so allocate and deallocate work
// during thread exit, static destruction and atexit handlers.
//
// Thread safety: every function may be called from any thread at any time. A block may be freed
// by any thread, exactly once, after which it must not be touched.
#pragma once

#include <cstddef>
#include <cstdint>

namespace reheap {

// Process-wide figures, counted when blocks move between threads' caches and slabs (slow paths,
// trim, thread exit), never per call; so approximate while threads run. They are exact when no
// call is in flight and trim() ran last on the threads that allocated, after the others had
// trimmed or exited.
struct MessageAllocatorStats {
  std::size_t bytes_in_use = 0;     // class blocks not back in their slab (live or cached) + large
  std::size_t bytes_mapped = 0;     // memory taken from the OS and not given back: RSS bound
  std::size_t bytes_reserved = 0;   // address space of the arena (reserved once, never used up)
  std::size_t slabs = 0;            // slabs owned by pools, those of exited threads included
  std::size_t cached_slabs = 0;     // free slabs kept mapped for reuse
  std::size_t released_slabs = 0;   // free slabs whose memory is back with the OS
  std::size_t large_blocks = 0;     // live blocks above the largest class, one mapping each
  std::size_t large_bytes = 0;      // their mapped bytes
  std::size_t pools = 0;            // pools ever made (one per thread alive at once, at most)
  std::size_t orphaned_pools = 0;   // pools of exited threads not yet adopted
  std::uint64_t local_frees = 0;    // blocks given back to their slab by its owning pool
  std::uint64_t remote_frees = 0;   // blocks given back to their slab by other threads
  std::uint64_t refills = 0;        // slow-path refills of a per-class cache
  std::uint64_t orphaned_slabs_adopted = 0;  // slabs taken over with an orphaned pool
  std::uint64_t failed_allocations = 0;      // requests answered with null
};

class MessageAllocator {
 public:
  // Blocks in this range come from a size class; larger ones are mapped one by one.
  static constexpr std::size_t kMaxClassSize = 32 * 1024;
  // Requests above this are refused (null) without asking the OS.
  static constexpr std::size_t kMaxSize = std::size_t{1} << 40;

  // A 16-byte aligned block of at least `size` bytes (size 0 gives a unique 16-byte block), or
  // null when the memory cannot be had. Never throws.
  static void* allocate(std::size_t size) noexcept;

  // Frees a block from allocate(), from any thread; null is ignored. A pointer that is not a
  // live message block aborts with a message (always for addresses outside the allocator's
  // memory; for addresses inside it, in builds with REHEAP_CHECKS).
  static void deallocate(void* p) noexcept;

  // The usable size of a live block: at least what was asked for.
  static std::size_t usable_size(const void* p) noexcept;

  static MessageAllocatorStats stats() noexcept;

  // Gives the calling thread's fully free slabs back to the OS, together with the free slabs of
  // exited threads and those cached process-wide. Blocks still live are not affected.
  static void trim() noexcept;
};

}  // namespace reheap
