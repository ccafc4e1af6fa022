// Relocating a restored heap's pointers into the program: the restore-time half (program_refs.h).
//
// A plan is made per snapshot file, from the pointers its header lists and the layout of the
// process now, before any page of that file is read: every pointer that cannot be mapped is
// found then, and the restore is refused naming them all. Applying the plan rewrites, in each page
// the file restores, the words whose value lies in a segment of an object that moved or changed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "address_ranges.h"
#include "reheap/program_layout.h"
#include "reheap/snapshot_file.h"

namespace reheap::detail::snapshot {

struct RelocationOptions {
  bool relink_libraries = false;  // map pointers into a library of another build by symbol
};

class Relocation {
 public:
  // The plan for the pages of the file `name` whose header is `saved`. Throws
  // SnapshotError(kLayoutMismatch) naming every pointer that cannot be mapped.
  static Relocation plan(const SnapshotHeader& saved, const ProgramLayout& now,
                         const RelocationOptions& options, const std::string& name);

  // True when no word needs to change (the same objects at the same addresses).
  bool empty() const noexcept { return moves_.empty(); }

  // Rewrites the words of [begin, begin + bytes) and returns how many. Throws
  // SnapshotError(kCorrupt) on a word that points into a moved object's saved segments but that
  // the header does not list.
  std::size_t apply(std::uintptr_t begin, std::size_t bytes) const;

 private:
  struct Range {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
  };
  std::string name_;
  AddressRanges<Range> ranges_;  // saved segments of the objects that moved
  std::unordered_map<std::uint64_t, std::uint64_t> moves_;  // saved value -> value now
};

}  // namespace reheap::detail::snapshot
