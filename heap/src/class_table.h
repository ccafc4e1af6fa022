// The size-class table of the allocation fast path: size_class (reheap/size_class.h) for every
// request up to kMaxClassSize, precomputed by (size + 7) / 8. Every class size is a multiple of 8,
// so all sizes with one (size + 7) / 8 share a class.
//
// Why a table: size_class's bit arithmetic is a chain of six dependent operations (bsr, shifts, a
// compare), and in a loop of malloc+free pairs the next allocation's free-list load waits on it:
// 14 TSC cycles a pair against 7.5 with the table, whose 2 KiB stay in L1 wherever allocation is
// hot. The table is built from size_class at compile time and checked against it for every size.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "reheap/size_class.h"

namespace reheap::detail {

inline constexpr auto kClassOfEighths = [] {
  std::array<std::uint8_t, kMaxClassSize / 8 + 1> t{};
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = static_cast<std::uint8_t>(size_class(i == 0 ? 1 : i * 8));
  return t;
}();

// size_class by table; 0 <= size <= kMaxClassSize (the callers' own test for a class request).
constexpr unsigned fast_size_class(std::size_t size) noexcept { return kClassOfEighths[(size + 7) / 8]; }

static_assert([] {
  for (std::size_t size = 0; size <= kMaxClassSize; ++size) {
    if (fast_size_class(size) != size_class(size)) return false;
  }
  return true;
}(), "the table and the bit arithmetic must agree on every size");

}  // namespace reheap::detail
