// Size classes of the message allocator: request size -> class -> block size.
//
// Sizes up to 128 bytes go in 16-byte steps (16, 32, ... 128); above that there are four classes
// per doubling (160, 192, 224, 256, 320, ... 24576, 28672, 32768), so above 128 bytes rounding
// wastes under 20% of a block (a half-exponent series would waste up to a third, and messages
// are often just above a power of two: a header plus a payload). Every block size is a multiple of 16, so every
// block is 16-byte aligned. The class is computed with a few bit operations, no table and no
// loop; sizes above the largest class map to kLargeClass, whose free list is always empty, so
// the allocation fast path needs a single test.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "reheap/message_allocator.h"

namespace reheap::detail::msg {

inline constexpr unsigned kNumClasses = 40;
inline constexpr unsigned kLargeClass = kNumClasses;  // the always-empty bin of the fast path
inline constexpr std::size_t kMaxClassSize = MessageAllocator::kMaxClassSize;

// The block size of class `cls` (< kNumClasses).
constexpr std::uint32_t class_block_size(unsigned cls) noexcept {
  if (cls < 8) return 16 * (cls + 1);
  const unsigned doubling = (cls - 8) / 4 + 7;   // 2^doubling < size <= 2^(doubling+1)
  const unsigned quarter = (cls - 8) % 4;
  return static_cast<std::uint32_t>((5u + quarter) << (doubling - 2));
}

// The class of `size`; kLargeClass for 0 and for everything above kMaxClassSize (the slow path
// serves 0 as 1). Branch-free, since message sizes vary from one call to the next: with s =
// size - 1 and b its highest bit, classes from 128 bytes up are four per power of two, picked by
// the two bits below b; taking b at least 6 makes the same expression give s / 16 for s < 128,
// once the 4 it adds below 64 is taken off.
constexpr unsigned size_class(std::size_t size) noexcept {
  const std::size_t s = size - 1;  // 0 wraps to SIZE_MAX: large
  const unsigned b = static_cast<unsigned>(std::bit_width(s | 64)) - 1;
  const std::size_t cls = 4 * std::size_t{b} - 20 + ((s >> (b - 2)) & 3) - 4 * std::size_t{s < 64};
  return static_cast<unsigned>(std::min<std::size_t>(cls, kLargeClass));
}

inline constexpr std::array<std::uint32_t, kNumClasses> kBlockSize = [] {
  std::array<std::uint32_t, kNumClasses> sizes{};
  for (unsigned c = 0; c < kNumClasses; ++c) sizes[c] = class_block_size(c);
  return sizes;
}();

static_assert(kBlockSize[0] == 16 && kBlockSize[7] == 128 && kBlockSize[8] == 160);
static_assert(kBlockSize[11] == 256 && kBlockSize[12] == 320 && kBlockSize[23] == 2048);
static_assert(kBlockSize[kNumClasses - 1] == kMaxClassSize);
static_assert(size_class(0) == kLargeClass && size_class(1) == 0 && size_class(16) == 0);
static_assert(size_class(17) == 1 && size_class(64) == 3 && size_class(65) == 4);
static_assert(size_class(128) == 7 && size_class(129) == 8 && size_class(160) == 8);
static_assert(size_class(161) == 9 && size_class(256) == 11 && size_class(257) == 12);
static_assert(size_class(kMaxClassSize) == kNumClasses - 1);
static_assert(size_class(kMaxClassSize + 1) == kLargeClass);
static_assert(size_class(~std::size_t{0}) == kLargeClass);
// Every class is the smallest that fits: checked for each boundary.
static_assert([] {
  for (unsigned c = 0; c < kNumClasses; ++c) {
    if (kBlockSize[c] % 16 != 0) return false;
    if (size_class(kBlockSize[c]) != c || size_class(kBlockSize[c] + 1) != c + 1) return false;
  }
  return true;
}());

}  // namespace reheap::detail::msg
