// Which pages of a replayed heap differ from the recorded heap, for a state divergence report.
//
// A state digest says that two heaps differ, not where. When the recording has a snapshot of the
// reactor after the very event whose digest differed (ReplayOptions::snapshots), the replayed
// heap is saved too and the two full snapshots are compared page by page - both are streamed in
// ascending address order, so only one run of each is in memory - and the differing pages are
// listed with the offsets of their first and last differing bytes. A page only one side stores
// is compared with a zero page, which is what the other side holds there. Two words that point
// into the program compare by what they point to (each snapshot's header names its program
// pointers, reheap::program_ref_name), so a replay in another binary, whose heap was relocated,
// lists only what really differs.
//
// What a snapshot holds besides the reactor's own state: a worker writes the reactor's armed
// timers (with the time each has left) and its sockets into the heap for the save, and a replay
// has neither, so a reactor with armed timers also differs where that list lies.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "reheap/heap.h"

namespace reheap::testing::detail {

// Text lines ("page 0x...: ..."), at most `max_pages` of them plus a total; throws what reading
// or writing the snapshots throws.
std::string describe_page_differences(const std::filesystem::path& recorded, Heap& replayed,
                                      std::size_t max_pages);

}  // namespace reheap::testing::detail
