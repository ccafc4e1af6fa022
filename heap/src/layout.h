// Address geometry of the zone, its chunks and their lanes. Everything the allocator derives
// from an address alone is defined here.
//
//   zone   = [class half | large half], each half a whole number of chunks
//   chunk  = 64 MiB, owned by exactly one heap (or free); the owner map has one entry per chunk
//   class chunk = 32 groups of 2 MiB; group = 32 lanes of 64 KiB
//       lane L < kNumClasses of any group holds only blocks of size class L;
//       lane kHeaderLane of group 0 holds the ChunkHeader (and, in a heap's first chunk, the
//       heap's own state); lane kShadowLane of each group holds the checked build's free bitmap.
//   large chunk = page 0: ChunkHeader, pages 1..8: page table, pages 9..: page runs;
//       or, for a huge block, the first chunk of a dedicated run (header page, then the block).
//
// So for any address a in the class half, (a >> 16) & 31 is its size class: that is how
// deallocation finds the class without a header. All classes' first lanes lie in one 2 MiB group,
// so an idle heap touches one page-table page.
#pragma once

#include <cstddef>
#include <cstdint>

#include "reheap/size_class.h"

namespace reheap::detail {

#ifdef REHEAP_CHECKS
inline constexpr bool kChecks = true;
#else
inline constexpr bool kChecks = false;
#endif

inline constexpr unsigned kPageShift = 12;
inline constexpr unsigned kLaneShift = 16;
inline constexpr std::size_t kLaneSize = std::size_t{1} << kLaneShift;
inline constexpr unsigned kLanesPerGroup = 32;
inline constexpr unsigned kGroupShift = 21;
inline constexpr std::size_t kGroupSize = std::size_t{1} << kGroupShift;
inline constexpr unsigned kGroupsPerChunk = 32;
inline constexpr unsigned kChunkShift = 26;
inline constexpr std::size_t kChunkSize = std::size_t{1} << kChunkShift;
inline constexpr std::size_t kPagesPerChunk = kChunkSize / kPageSize;

inline constexpr unsigned kHeaderLane = kNumClasses;
inline constexpr unsigned kShadowLane = kNumClasses + 1;

// Large chunks: the page table has one 16-bit entry per page of the chunk.
inline constexpr std::size_t kPageTablePages = kPagesPerChunk * 2 / kPageSize;
inline constexpr std::uint32_t kFirstRunPage = 1 + kPageTablePages;
inline constexpr std::size_t kMaxLargePages = kMaxLargeSize / kPageSize;
// Over-aligned requests served by huge blocks may ask for up to this much alignment.
inline constexpr std::size_t kMaxAlignment = kChunkSize / 4;

static_assert(kPageSize == std::size_t{1} << kPageShift);
static_assert(kGroupShift == kLaneShift + 5 && kChunkShift == kGroupShift + 5);
static_assert(kLanesPerGroup == 32 && kGroupsPerChunk == 32);
static_assert(kShadowLane < kLanesPerGroup, "the class lanes, header and shadow lanes must fit");
static_assert(kMaxClassSize <= kLaneSize / 4, "a lane must hold several blocks of every class");
static_assert(kFirstRunPage + kMaxLargePages < kPagesPerChunk);
static_assert(kPagesPerChunk - kFirstRunPage <= 0x3fff, "page-table entries keep lengths in 14 bits");

constexpr std::uintptr_t lane_index(std::uintptr_t a) noexcept {
  return (a >> kLaneShift) & (kLanesPerGroup - 1);
}
constexpr std::uintptr_t align_down(std::uintptr_t a, std::size_t to) noexcept {
  return a & ~(static_cast<std::uintptr_t>(to) - 1);
}
constexpr std::size_t align_up(std::size_t n, std::size_t to) noexcept {
  return (n + to - 1) & ~(to - 1);
}

}  // namespace reheap::detail
