// The fast paths of the message allocator, inlined into MessageAllocator::allocate and
// deallocate. Each is a handful of instructions with one test that matters:
//
//   allocate:   size -> class (bit arithmetic; too large -> the always-empty bin)
//               -> pop the bin's `free` list (else take `freed` as `free`)   else allocate_slow
//   deallocate: address -> in the arena?                     else free_outside_arena
//               -> slab header (address rounded down) -> class -> room in the bin's `freed`?
//               -> push                                       else free_slow
// Neither touches an atomic, whoever allocated the block: ownership is sorted out in bulk on
// the slow paths (message_refill.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "message_allocator/message_arena.h"
#include "message_allocator/message_build.h"
#include "message_allocator/message_pool.h"
#include "message_allocator/message_slab.h"

namespace reheap::detail::msg {

// The slow paths (message_allocator.cpp).
REHEAP_MSG_SLOW_PATH void* allocate_slow(std::size_t size) noexcept;
REHEAP_MSG_SLOW_PATH void free_slow(Block* b, unsigned cls) noexcept;  // bin full, or no pool
REHEAP_MSG_SLOW_PATH void free_outside_arena(void* p) noexcept;  // null, large, or misuse
REHEAP_MSG_SLOW_PATH void check_block(std::uintptr_t a) noexcept;  // checked builds: may abort

REHEAP_MSG_FAST_PATH void* allocate_fast(std::size_t size) noexcept {
  const unsigned cls = size_class(size);
  Bin& bin = t_pool->bins[cls];
  Block* b = bin.free;
  if (b == nullptr) [[unlikely]] {
    // Blocks this thread freed come next. Taking them here rather than in the slow path matters
    // when two threads trade messages: each then lives on the blocks the other just sent it,
    // and `free` runs dry every few allocations.
    b = bin.freed;
    if (b == nullptr) return allocate_slow(size);
    bin.freed = nullptr;
    bin.freed_count = 0;
  }
  bin.free = b->next;
  unpoison(b, kBlockSize[cls]);
  return b;
}

REHEAP_MSG_FAST_PATH void free_fast(void* p) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (!in_arena(a)) [[unlikely]] return free_outside_arena(p);  // null, large, or misuse
  if constexpr (kChecks) check_block(a);
  const Slab* s = slab_of(a);
  const unsigned cls = s->size_class;
  poison_free_block(p, kBlockSize[cls]);
  auto* b = static_cast<Block*>(p);
  Bin& bin = t_pool->bins[cls];
  if (bin.freed_count >= bin.limit) [[unlikely]] return free_slow(b, cls);
  b->next = bin.freed;
  bin.freed = b;
  ++bin.freed_count;
}

}  // namespace reheap::detail::msg
