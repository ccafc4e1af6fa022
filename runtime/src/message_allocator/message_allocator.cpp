// MessageAllocator's entry points: the fast paths (message_fast.h) and what lies directly
// behind them: the allocation slow path, frees outside the arena, checks, statistics and trim.
#include "reheap/message_allocator.h"

#include <atomic>

#include "message_allocator/message_arena.h"
#include "message_allocator/message_build.h"
#include "message_allocator/message_fast.h"
#include "message_allocator/message_large.h"
#include "message_allocator/message_pool.h"
#include "message_allocator/message_report.h"

namespace reheap::detail::msg {
namespace {

constinit std::atomic<std::uint64_t> g_failed_allocations{0};

REHEAP_MSG_SLOW_PATH void* fail() noexcept {
  g_failed_allocations.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

REHEAP_MSG_SLOW_PATH void* allocate_large(std::size_t size) noexcept {
  if (size > MessageAllocator::kMaxSize) return fail();
  void* p = large_allocate(size);
  return p != nullptr ? p : fail();
}

}  // namespace

void* allocate_slow(std::size_t size) noexcept {
  if (size > kMaxClassSize) return allocate_large(size);
  if (size == 0) size = 1;
  Pool* pool = t_pool;
  if (pool == &g_empty_pool && (pool = attach_pool(false)) == nullptr) return fail();
  const unsigned cls = size_class(size);
  Bin& bin = pool->bins[cls];
  Block* b = bin.free;  // size 0 (served as 1) and a newly attached pool may have blocks
  if (b != nullptr) {
    bin.free = b->next;
  } else if ((b = refill(pool, cls)) == nullptr) {
    return fail();
  }
  unpoison(b, kBlockSize[cls]);
  return b;
}

void free_outside_arena(void* p) noexcept {
  if (p == nullptr || large_deallocate(p)) return;
  fatal("MessageAllocator::deallocate(%p): not a block of the message allocator (outside its "
        "arena and not a live large block): a double free, or memory from another allocator",
        p);
}

void check_block(std::uintptr_t a) noexcept {
  const void* p = reinterpret_cast<const void*>(a);
  if (!in_committed_slab(a)) {
    fatal("MessageAllocator::deallocate(%p): the address lies in the message arena but beyond "
          "every slab ever used", p);
  }
  const Slab* s = slab_of(a);
  if (s->magic != kSlabMagic || s->pool == nullptr) {
    fatal("MessageAllocator::deallocate(%p): the slab holding it is free: a double free or a "
          "block of no live message", p);
  }
  const auto first = reinterpret_cast<std::uintptr_t>(s->first_block());
  if (a < first || (a - first) % s->block_size != 0 || (a - first) / s->block_size >= s->capacity) {
    fatal("MessageAllocator::deallocate(%p): not the start of a block (slab of %u-byte blocks)",
          p, s->block_size);
  }
}

void free_slow(Block* b, unsigned cls) noexcept {
  Pool* pool = t_pool;
  if (pool == &g_empty_pool && (pool = attach_pool(true)) == nullptr) {
    b->next = nullptr;  // no pool (the thread is exiting): straight back to the slab
    give_back(nullptr, b);
    return;
  }
  Bin& bin = pool->bins[cls];
  if (bin.freed_count >= bin.limit) {
    give_back(pool, bin.freed);
    bin.freed = nullptr;
    bin.freed_count = 0;
  }
  b->next = bin.freed;
  bin.freed = b;
  ++bin.freed_count;
}

}  // namespace reheap::detail::msg

namespace reheap {

namespace msg = detail::msg;

void* MessageAllocator::allocate(std::size_t size) noexcept { return msg::allocate_fast(size); }

void MessageAllocator::deallocate(void* p) noexcept { msg::free_fast(p); }

std::size_t MessageAllocator::usable_size(const void* p) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (msg::in_arena(a)) return msg::slab_of(a)->block_size;
  return p == nullptr ? 0 : msg::large_usable_size(p);
}

MessageAllocatorStats MessageAllocator::stats() noexcept {
  MessageAllocatorStats st;
  msg::for_each_pool([&st](const msg::Pool& pool) {
    ++st.pools;
    st.slabs += pool.slabs.get();
    st.bytes_in_use += pool.out_bytes.get();
    st.local_frees += pool.local_frees.get();
    st.remote_frees += pool.remote_frees.get();
    st.refills += pool.refills.get();
  });
  const msg::ArenaStats arena = msg::arena_stats();
  const msg::LargeStats large = msg::large_stats();
  st.bytes_reserved = arena.reserved_bytes;
  st.bytes_mapped = arena.mapped_slabs * msg::kSlabSize + large.bytes;
  st.cached_slabs = arena.cached_slabs;
  st.released_slabs = arena.released_slabs;
  st.large_blocks = large.blocks;
  st.large_bytes = large.bytes;
  st.bytes_in_use += large.bytes;
  st.orphaned_pools = msg::orphaned_pool_count();
  st.orphaned_slabs_adopted = msg::adopted_slab_count();
  st.failed_allocations = msg::g_failed_allocations.load(std::memory_order_relaxed);
  return st;
}

void MessageAllocator::trim() noexcept {
  msg::Pool* pool = msg::t_pool;
  if (pool != &msg::g_empty_pool) msg::trim_pool(pool, true);
  msg::trim_orphans();
  msg::release_cached_slabs();
}

}  // namespace reheap
