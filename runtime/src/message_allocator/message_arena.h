// Arena: the one reserved range of address space all slabs come from, and its store of free
// slabs.
//
// The range (kArenaSize, aligned to kSlabSize) is reserved on first use, inaccessible and
// uncommitted, wherever the kernel puts it; it is never unmapped. So "is this a message block?"
// is one subtraction and one compare against a base that never changes once set, and a slab
// header is always readable. Slabs are made accessible by advancing a frontier in kCommitStep
// steps (one mprotect per 16 slabs, and the range stays two mappings however slabs come and go).
//
// Free slabs wait in a store, under a lock (taken once per slab, i.e. once per thousands of
// blocks): up to kCachedSlabs stay committed for quick reuse, the others are given back to the
// OS (MADV_DONTNEED) and reused before the frontier advances. The store keeps slab numbers in
// side tables, not in the slabs, so a slab given back to the OS is not touched again.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "message_allocator/message_slab.h"

namespace reheap::detail::msg {

#if defined(REHEAP_MESSAGE_ARENA_GIB)  // a build for valgrind (CMake REHEAP_MESSAGE_ARENA_GIB)
inline constexpr std::size_t kArenaSize = std::size_t{REHEAP_MESSAGE_ARENA_GIB} << 30;
#elif defined(__SANITIZE_THREAD__)
inline constexpr std::size_t kArenaSize = std::size_t{16} << 30;  // TSan's mmap range is narrower
#else
inline constexpr std::size_t kArenaSize = std::size_t{64} << 30;
#endif
inline constexpr std::size_t kArenaSlabs = kArenaSize / kSlabSize;
inline constexpr std::size_t kCommitStep = 16 * kSlabSize;
// 16 MiB kept committed process-wide. A streaming receiver that falls behind holds its backlog
// in slabs and gives them back as it catches up; with 4 MiB (16 slabs) the sender faulted the
// rest in again (page faults, MADV_DONTNEED and clear_page were ~10% of oneway's CPU).
inline constexpr std::size_t kCachedSlabs = 64;

static_assert(kArenaSize % kCommitStep == 0);
static_assert(kArenaSlabs <= std::uint32_t{0xffffffff});

// Until the arena is reserved, the base is far above every user address, so the range check
// fails for every pointer (null included) without a separate test.
inline constexpr std::uintptr_t kNoArena = std::uintptr_t{1} << 63;

// Read on every free; written once, when the arena is reserved.
extern constinit std::atomic<std::uintptr_t> g_arena_base;

inline bool in_arena(std::uintptr_t a) noexcept {
  return a - g_arena_base.load(std::memory_order_relaxed) < kArenaSize;
}

// A slab's memory (header not initialized; zero if it is fresh or was given back), or null when
// the arena is exhausted or cannot be reserved.
Slab* acquire_slab() noexcept;

// Takes back an entirely free slab; `to_os` gives its memory back now rather than caching it.
void release_slab(Slab* slab, bool to_os) noexcept;

// Gives the memory of every cached slab back to the OS.
void release_cached_slabs() noexcept;

// True if `a` lies in a slab the frontier has reached (its header is readable).
bool in_committed_slab(std::uintptr_t a) noexcept;

struct ArenaStats {
  std::size_t reserved_bytes = 0;
  std::size_t mapped_slabs = 0;    // slabs whose memory may be resident: owned or cached
  std::size_t cached_slabs = 0;
  std::size_t released_slabs = 0;  // free, memory given back
};
ArenaStats arena_stats() noexcept;

}  // namespace reheap::detail::msg
