// Finding the words of a heap that point into the program, at save time (program_refs.h).
//
// The scan is one pass over the pages a snapshot writes, one compare per word in the common case:
// a value below the lowest loaded segment or above the highest (heap pointers, small integers,
// most hashes) is rejected at once; the rest are looked up among the segments and counted per
// distinct value. Resolving a value to a symbol happens once per distinct value, at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "address_ranges.h"
#include "reheap/program_layout.h"
#include "reheap/program_refs.h"

namespace reheap::detail::snapshot {

class ProgramScan {
 public:
  explicit ProgramScan(const ProgramLayout& layout);

  // Scans [begin, begin + bytes), 8-byte aligned.
  void scan(std::uintptr_t begin, std::size_t bytes);

  // The distinct values found, resolved, ascending by value.
  std::vector<ProgramRef> refs() const;

  // Whether `value` lies in a loaded segment of the layout: the test scan() makes of each word.
  bool points_into_program(std::uint64_t value) const noexcept {
    return !segments_.outside_all(value) && segments_.find(value) != nullptr;
  }

  // `value` (which points_into_program) resolved against its object's symbols; `words` is 0.
  ProgramRef resolve(std::uint64_t value) const;

  // The distinct values found and how many words held each, unresolved.
  const std::unordered_map<std::uint64_t, std::uint64_t>& counts() const noexcept { return counts_; }

 private:
  struct Segment {
    std::uintptr_t begin = 0;
    std::uintptr_t end = 0;
    std::uint32_t object = 0;
    bool writable = false;
    bool executable = false;
  };

  const ProgramLayout& layout_;
  AddressRanges<Segment> segments_;
  std::unordered_map<std::uint64_t, std::uint64_t> counts_;
};

}  // namespace reheap::detail::snapshot
