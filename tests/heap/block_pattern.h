// Test support: sizes, and a per-block byte pattern that tells whether a block's contents
// survived (each block gets its own seed, so blocks that overlap or were swapped show up).
#pragma once

#include <cstddef>
#include <cstdint>

namespace reheap::testing {

inline constexpr std::size_t KiB = 1024;
inline constexpr std::size_t MiB = 1024 * KiB;

inline unsigned char pattern_byte(std::uint64_t seed, std::size_t i) {
  const std::uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
  return static_cast<unsigned char>((x >> 56) ^ (x >> 29));
}

inline void fill(void* p, std::size_t n, std::uint64_t seed) {
  auto* bytes = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = pattern_byte(seed, i);
}

// The number of leading bytes of [p, p + n) that still hold the pattern `seed`.
inline std::size_t intact_prefix(const void* p, std::size_t n, std::uint64_t seed) {
  const auto* bytes = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    if (bytes[i] != pattern_byte(seed, i)) return i;
  }
  return n;
}

inline bool holds_pattern(const void* p, std::size_t n, std::uint64_t seed) {
  return intact_prefix(p, n, seed) == n;
}

}  // namespace reheap::testing
