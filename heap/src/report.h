// How heap misuse is reported. Checked builds (REHEAP_CHECKS) print a message naming the problem
// and abort; other builds ignore the offending free, count it in ZoneStats::ignored_frees, and
// go on: the block leaks, but no other heap is touched.
#pragma once

#include <cstdint>

namespace reheap::detail {

enum class Misuse {
  kDoubleFree,        // the block is already free
  kNotCurrentHeap,    // the block belongs to a live heap other than the one freeing it
  kNeverHandedOut,    // the address lies in the heap but is not the start of a live block
  kNoLiveHeap,        // the address lies in the zone but in no live heap's chunks
  kDestroyedHeap,     // the address lies in chunks a destroyed heap gave back (owner: that heap)
};

// Reports misuse of `ptr`; `owner` and `current` are heap ids (0 for none). Returns only in
// unchecked builds.
void report_misuse(Misuse kind, const void* ptr, std::uint64_t owner,
                   std::uint64_t current) noexcept;

// Prints "reheap: <message>" to stderr and aborts. For broken invariants and fatal OS errors.
[[noreturn]] void fatal(const char* format, ...) noexcept __attribute__((format(printf, 1, 2)));

}  // namespace reheap::detail
