// The only place heap/ talks to the kernel about memory. Each function returns 0 on success or
// an errno value, so callers decide how to report the failure.
#pragma once

#include <cstddef>
#include <cstdint>

namespace reheap::detail::os {

// Reserves [base, base+size) as inaccessible, uncommitted address space, failing (EEXIST) rather
// than replacing anything already mapped there.
int reserve_fixed(std::uintptr_t base, std::size_t size) noexcept;

// Makes reserved pages readable and writable. Pages are committed lazily on first touch.
int make_accessible(std::uintptr_t base, std::size_t size) noexcept;

// Makes pages inaccessible again (PROT_NONE); they stay reserved.
int make_inaccessible(std::uintptr_t base, std::size_t size) noexcept;

// Gives the pages back to the OS; they read as zero afterwards and keep their protection.
int discard(std::uintptr_t base, std::size_t size) noexcept;

// Commits the pages now (MADV_POPULATE_WRITE, Linux 5.14), so that filling them with read(2)
// does not fault once per page. Failure only costs speed.
int populate(std::uintptr_t base, std::size_t size) noexcept;

// Anonymous, lazily committed memory outside the zone, for the zone's own tables.
void* map_table(std::size_t size) noexcept;
// Unmaps what map_table mapped.
void unmap_table(void* table, std::size_t size) noexcept;

std::size_t page_size() noexcept;

// A coarse monotonic clock (CLOCK_MONOTONIC_COARSE, a few ms resolution, no system call), in ms.
std::uint64_t coarse_now_ms() noexcept;

}  // namespace reheap::detail::os
