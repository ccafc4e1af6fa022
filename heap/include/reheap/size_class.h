// Size classes: the mapping from a requested size to the block size that serves it.
//
// Requests up to kMaxClassSize are served from fixed-size blocks. The block sizes follow a
// half-exponent sequence (each power of two, and 1.5x each power of two) so that the waste per
// block stays under a third while the class of a size is computed from the position of its two
// highest set bits, with no loop. The allocation fast path reads the same answer from a table
// built from that computation (heap/src/class_table.h). 24 is left out of the sequence: a 24-byte
// block cannot keep the 16-byte alignment promised for every block of 16 bytes or more.
//
// Classes 0..16 (8 B .. 4 KiB) are "small", 17..20 (6 KiB .. 16 KiB) are "medium" (multi-page
// blocks). Larger requests are "large" (page runs, up to kMaxLargeSize) or "huge" (dedicated
// chunk runs given back to the OS on free).
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace reheap {

inline constexpr std::size_t kPageSize = 4096;
inline constexpr unsigned kNumClasses = 21;
inline constexpr unsigned kNumSmallClasses = 17;

inline constexpr std::array<std::uint32_t, kNumClasses> kClassSize = {
    8,    16,   32,   48,   64,   96,   128,  192,   256,   384,   512,
    768,  1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384};

inline constexpr std::size_t kMaxClassSize = 16384;      // largest block served by a class
inline constexpr std::size_t kMaxLargeSize = 1u << 20;   // largest request served by page runs

// The class of a request of `size` bytes (0 <= size <= kMaxClassSize).
constexpr unsigned size_class(std::size_t size) noexcept {
  if (size <= 16) return size > 8 ? 1u : 0u;
  const std::size_t s = size - 1;                       // s >= 16, so b >= 4
  const unsigned b = 63u - static_cast<unsigned>(std::countl_zero(s));
  const unsigned second = static_cast<unsigned>(s >> (b - 1)) & 1u;
  const unsigned c = 2u * b + second - 7u;
  return c < 2u ? 2u : c;                               // 17..32 bytes: the 32-byte class
}

static_assert(size_class(1) == 0 && size_class(8) == 0 && size_class(9) == 1);
static_assert(size_class(16) == 1 && size_class(17) == 2 && size_class(32) == 2);
static_assert(size_class(33) == 3 && size_class(48) == 3 && size_class(49) == 4);
static_assert(size_class(4096) == 16 && size_class(4097) == 17);
static_assert(size_class(kMaxClassSize) == kNumClasses - 1);
static_assert(kClassSize[kNumClasses - 1] == kMaxClassSize);

}  // namespace reheap
