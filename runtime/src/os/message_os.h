// The message allocator's OS layer: the only place runtime/ maps, protects or discards memory.
// Every function is a thin wrapper over one system call, never allocates, and reports failure
// by its return value, so that callers (on allocation paths that must not throw) decide.
#pragma once

#include <cstddef>
#include <cstdint>

namespace reheap::detail::msg::os {

inline constexpr std::size_t kPageSize = 4096;

// Reserves `size` bytes of inaccessible, uncommitted address space aligned to `alignment` (a
// power of two, at least a page) anywhere the kernel chooses. Null on failure.
void* reserve(std::size_t size, std::size_t alignment) noexcept;

// Makes reserved pages readable and writable; the kernel commits them on first touch.
bool commit(void* base, std::size_t size) noexcept;

// Gives the pages back to the OS. They stay accessible and read as zero afterwards.
void decommit(void* base, std::size_t size) noexcept;

// Readable, writable, lazily committed memory of its own mapping (large blocks, pool tables).
// Null on failure.
void* map(std::size_t size) noexcept;
void unmap(void* base, std::size_t size) noexcept;

}  // namespace reheap::detail::msg::os
