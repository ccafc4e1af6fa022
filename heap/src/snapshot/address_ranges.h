// Sorted, disjoint address ranges with a one-compare rejection of values outside all of them: the
// lookup both halves of relocation make for every word of a heap (program_scan.h, relocation.h).
// Most words - heap pointers, small integers, hashes - lie below the lowest range or above the
// highest and never reach the binary search.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace reheap::detail::snapshot {

template <typename Range>  // a struct with `begin` and `end` (exclusive) members
class AddressRanges {
 public:
  void add(const Range& range) { ranges_.push_back(range); }

  // Sorts the ranges; call after the last add().
  void seal() {
    std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
    if (ranges_.empty()) return;
    low_ = ranges_.front().begin;
    std::uint64_t high = 0;
    for (const Range& r : ranges_) high = std::max<std::uint64_t>(high, r.end);
    span_ = high - low_;
  }

  bool outside_all(std::uint64_t value) const noexcept { return value - low_ >= span_; }

  // The range holding `value`, or null.
  const Range* find(std::uint64_t value) const noexcept {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), value,
                               [](std::uint64_t v, const Range& r) { return v < r.begin; });
    if (it == ranges_.begin()) return nullptr;
    --it;
    return value < it->end ? &*it : nullptr;
  }

 private:
  std::vector<Range> ranges_;
  std::uint64_t low_ = 1;  // [low_, low_ + span_) covers every range; empty: nothing is inside
  std::uint64_t span_ = 0;
};

}  // namespace reheap::detail::snapshot
