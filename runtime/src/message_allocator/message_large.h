// Large blocks: requests above the largest size class, each in a mapping of its own.
//
// A large block is page-aligned and starts its mapping, and its size lives in a registry (an
// open-addressing hash table in mapped memory, under a lock) rather than in a header: the block
// keeps its page alignment, and a free of an address the allocator never handed out is told
// apart from a large block without reading memory that may not be mapped. Large messages are
// rare and cost a system call each way, so the lock is not what limits them.
#pragma once

#include <cstddef>

namespace reheap::detail::msg {

// A fresh mapping of at least `size` bytes, or null.
void* large_allocate(std::size_t size) noexcept;

// Unmaps the large block `p`; false (and nothing done) if `p` is not one.
bool large_deallocate(void* p) noexcept;

// The mapped size of the large block `p`, or 0 if `p` is not one.
std::size_t large_usable_size(const void* p) noexcept;

struct LargeStats {
  std::size_t blocks = 0;
  std::size_t bytes = 0;
};
LargeStats large_stats() noexcept;

}  // namespace reheap::detail::msg
