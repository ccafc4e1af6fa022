// The process's resident memory, as the kernel accounts it (/proc/self/status).
//
// Peak RSS is VmHWM, the high-water mark of VmRSS. Writing "5" to /proc/self/clear_refs resets
// the mark to the current RSS (Linux >= 4.0), which lets a benchmark measure the peak of one phase
// (the replay) without the peak of an earlier one (building the trace). None of these functions
// allocates, so they may run inside any allocator's scope without disturbing what they measure.
#pragma once

#include <cstddef>

namespace bench {

// VmRSS and VmHWM in bytes; 0 when /proc is unreadable.
std::size_t current_rss_bytes() noexcept;
std::size_t peak_rss_bytes() noexcept;

// The kernel's page tables of this process (VmPTE), in bytes; 0 when /proc is unreadable.
std::size_t page_table_bytes() noexcept;

// Resets VmHWM to VmRSS. False when the kernel refuses (then the peak covers the whole process).
bool reset_peak_rss() noexcept;

}  // namespace bench
