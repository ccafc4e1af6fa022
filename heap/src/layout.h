// Address geometry of the zone, its chunks and their lanes. Everything the allocator derives
// from an address alone is defined here.
//
//   zone   = [class half | large half], each half a whole number of chunks
//   chunk  = 64 MiB, owned by exactly one heap (or free); the owner map has one entry per chunk
//   class chunk = 32 groups of 2 MiB; group = 32 lanes of 64 KiB. Each class has 32 lanes in
//       each class chunk, numbered 0..31 in carving order:
//         - group 0, lane c (c < kNumClasses): lane 0 of class c. Lane kHeaderLane holds the
//           ChunkHeader (and, in a heap's first chunk, the heap's own state);
//         - group c + 1, lanes 0..30: lanes 1..31 of class c, one contiguous 1.94 MiB;
//         - group 0's lane kShadowLane and group kShadowGroup: the checked build's free bitmap.
//   large chunk = page 0: ChunkHeader, pages 1..8: page table, pages 9..: page runs;
//       or, for a huge block, the first chunk of a dedicated run (header page, then the block).
//
// So the size class of any address in the class half is a function of its bits 16..25
// (class_of_address): that is how deallocation finds the class without a header. All classes'
// first lanes lie in group 0, so an idle heap touches one page-table page; a class that outgrows
// its first lane carves the rest of the chunk's share in one range, so that its blocks lie packed
// (16 MiB of a hash table's nodes in 16 regions of 2 MiB, not 256: fewer page-table pages for the
// TLB misses of random access to walk, tools/bench/lane_locality).
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
inline constexpr unsigned kShadowLane = kLanesPerGroup - 1;
// A class's lanes in one class chunk: one in group 0, and all but the last lane of its own group.
inline constexpr unsigned kLanesPerClassChunk = 1 + (kLanesPerGroup - 1);

// Large chunks: the page table has one 16-bit entry per page of the chunk.
inline constexpr std::size_t kPageTablePages = kPagesPerChunk * 2 / kPageSize;
inline constexpr std::uint32_t kFirstRunPage = 1 + kPageTablePages;
inline constexpr std::size_t kMaxLargePages = kMaxLargeSize / kPageSize;
// Over-aligned requests served by huge blocks may ask for up to this much alignment.
inline constexpr std::size_t kMaxAlignment = kChunkSize / 4;

static_assert(kPageSize == std::size_t{1} << kPageShift);
static_assert(kGroupShift == kLaneShift + 5 && kChunkShift == kGroupShift + 5);
static_assert(kLanesPerGroup == 32 && kGroupsPerChunk == 32);
static_assert(kHeaderLane < kShadowLane, "group 0 holds every class's first lane, the header and the shadow");
static_assert(kNumClasses + 1 < kGroupsPerChunk, "group 0 and a group per class must fit in a chunk");
static_assert(kMaxClassSize <= kLaneSize / 4, "a lane must hold several blocks of every class");
static_assert(kFirstRunPage + kMaxLargePages < kPagesPerChunk);
static_assert(kPagesPerChunk - kFirstRunPage <= 0x3fff, "page-table entries keep lengths in 14 bits");

// The lane an address lies in within its group, and its group within the chunk.
constexpr unsigned lane_slot(std::uintptr_t a) noexcept {
  return static_cast<unsigned>(a >> kLaneShift) & (kLanesPerGroup - 1);
}
constexpr unsigned group_index(std::uintptr_t a) noexcept {
  return static_cast<unsigned>(a >> kGroupShift) & (kGroupsPerChunk - 1);
}

// Where lane `lane` (0..kLanesPerClassChunk-1) of class `cls` starts, from its chunk's start.
constexpr std::uintptr_t lane_offset(unsigned cls, unsigned lane) noexcept {
  return lane == 0 ? std::uintptr_t{cls} * kLaneSize
                   : (std::uintptr_t{cls} + 1) * kGroupSize + std::uintptr_t{lane - 1} * kLaneSize;
}
// The lane number of an address in a class lane: lane_offset's inverse.
constexpr unsigned lane_number(std::uintptr_t a) noexcept {
  return group_index(a) == 0 ? 0 : lane_slot(a) + 1;
}

// The size class of a class-chunk address: kNumClasses or more for the header and shadow lanes
// and the groups past the classes'. Two fields and a select (the compiler's cmov): deallocation's
// next store waits on it, 1.5 TSC cycles more a class-size pair than the one field of a lane per
// 2 MiB (7.3 -> 8.8). Measured and dropped: a 1 KiB table (+2.8 cycles); a branch (-0.3 cycles on
// that pair, but a mix of the two kinds of lane mispredicts it: seed 002's slots at 79 MB took
// 1.4 ns a step more); a hand-written cmov off the mask's flag, with the header in lane 0 so that
// no subtraction follows (+2.2 cycles, unexplained); a sized delete taking the class from its
// size and checking that the address agrees (+1.2 cycles: the check still reads the address's
// class, and the pair runs more instructions).
constexpr unsigned class_of_address(std::uintptr_t a) noexcept {
  const unsigned group = group_index(a);
  return group != 0 ? group - 1 : lane_slot(a);
}

// The checked build's free bitmap: one bit per 8 bytes of each lane, kShadowPerLane bytes a lane.
// Group 0's lanes have theirs in its lane kShadowLane, the classes' groups theirs in group
// kShadowGroup (kLanesPerGroup lanes' worth for each group, in group order).
inline constexpr std::size_t kShadowPerLane = kLaneSize / 64;
inline constexpr unsigned kShadowGroup = kNumClasses + 1;
constexpr std::uintptr_t shadow_offset(std::uintptr_t a) noexcept {
  const unsigned group = group_index(a);
  const std::uintptr_t bits = std::uintptr_t{lane_slot(a)} * kShadowPerLane;
  return group == 0 ? kShadowLane * kLaneSize + bits
                    : std::uintptr_t{kShadowGroup} * kGroupSize + (group - 1) * kLanesPerGroup * kShadowPerLane + bits;
}
static_assert(kShadowGroup < kGroupsPerChunk && kNumClasses * kLanesPerGroup * kShadowPerLane <= kGroupSize);

static_assert([] {
  for (unsigned cls = 0; cls < kNumClasses; ++cls) {
    for (unsigned lane = 0; lane < kLanesPerClassChunk; ++lane) {
      const std::uintptr_t a = lane_offset(cls, lane);
      if (class_of_address(a) != cls || lane_number(a) != lane) return false;
      if (class_of_address(shadow_offset(a)) < kNumClasses) return false;
    }
  }
  return class_of_address(kHeaderLane * kLaneSize) >= kNumClasses &&
         class_of_address(kShadowLane * kLaneSize) >= kNumClasses &&
         class_of_address(std::uintptr_t{kShadowGroup} * kGroupSize) >= kNumClasses;
}(), "every lane is one class's, its shadow none, and lane_number inverts lane_offset");

constexpr std::uintptr_t align_down(std::uintptr_t a, std::size_t to) noexcept {
  return a & ~(static_cast<std::uintptr_t>(to) - 1);
}
constexpr std::size_t align_up(std::size_t n, std::size_t to) noexcept {
  return (n + to - 1) & ~(to - 1);
}

}  // namespace reheap::detail
