#include "message_allocator/message_arena.h"

#include <mutex>
#include <type_traits>

#include "message_allocator/message_build.h"
#include "os/message_os.h"

namespace reheap::detail::msg {

constinit std::atomic<std::uintptr_t> g_arena_base{kNoArena};

namespace {

// Everything below is static storage that is never destroyed (all trivially destructible), so
// slabs can be taken and given back during static destruction.
static_assert(std::is_trivially_destructible_v<std::mutex>);

struct SlabStack {
  std::uint32_t* slots = nullptr;  // kArenaSlabs entries, mapped lazily with the arena
  std::size_t size = 0;

  void push(std::uint32_t index) noexcept { slots[size++] = index; }
  std::uint32_t pop() noexcept { return slots[--size]; }
};

struct ArenaState {
  std::mutex lock;
  bool tried = false;                 // reservation attempted (it is not retried)
  std::uintptr_t base = 0;
  std::size_t fresh = 0;              // slabs [0, fresh) have been handed out at least once
  std::size_t committed = 0;          // slabs [0, committed) are accessible
  std::atomic<std::uintptr_t> committed_end{0};  // base + committed * kSlabSize, for checks
  SlabStack cached;                   // free, memory still committed
  SlabStack released;                 // free, memory given back
  std::atomic<std::size_t> mapped_slabs{0};
  std::atomic<std::size_t> cached_count{0};
  std::atomic<std::size_t> released_count{0};
};

constinit ArenaState g_state;

// Reserves the range and maps the store's side tables. Under the lock.
bool reserve_arena(ArenaState& s) noexcept {
  if (s.tried) return s.base != 0;
  s.tried = true;
  void* range = os::reserve(kArenaSize, kSlabSize);
  void* tables = os::map(2 * kArenaSlabs * sizeof(std::uint32_t));
  if (range == nullptr || tables == nullptr) {
    if (range != nullptr) os::unmap(range, kArenaSize);
    if (tables != nullptr) os::unmap(tables, 2 * kArenaSlabs * sizeof(std::uint32_t));
    return false;
  }
  s.cached.slots = static_cast<std::uint32_t*>(tables);
  s.released.slots = s.cached.slots + kArenaSlabs;
  s.base = reinterpret_cast<std::uintptr_t>(range);
  register_root_region(range, kArenaSize);
  g_arena_base.store(s.base, std::memory_order_relaxed);
  return true;
}

Slab* slab_at(const ArenaState& s, std::size_t index) noexcept {
  return reinterpret_cast<Slab*>(s.base + index * kSlabSize);
}

std::uint32_t index_of(const ArenaState& s, const Slab* slab) noexcept {
  return static_cast<std::uint32_t>((reinterpret_cast<std::uintptr_t>(slab) - s.base) / kSlabSize);
}

}  // namespace

Slab* acquire_slab() noexcept {
  ArenaState& s = g_state;
  std::lock_guard<std::mutex> guard(s.lock);
  if (s.cached.size > 0) {
    s.cached_count.store(s.cached.size - 1, std::memory_order_relaxed);
    return slab_at(s, s.cached.pop());
  }
  if (s.released.size > 0) {
    s.released_count.store(s.released.size - 1, std::memory_order_relaxed);
    s.mapped_slabs.fetch_add(1, std::memory_order_relaxed);
    return slab_at(s, s.released.pop());
  }
  if (!reserve_arena(s) || s.fresh == kArenaSlabs) return nullptr;
  if (s.fresh == s.committed) {
    if (!os::commit(slab_at(s, s.committed), kCommitStep)) return nullptr;
    s.committed += kCommitStep / kSlabSize;
    s.committed_end.store(s.base + s.committed * kSlabSize, std::memory_order_relaxed);
  }
  s.mapped_slabs.fetch_add(1, std::memory_order_relaxed);
  return slab_at(s, s.fresh++);
}

void release_slab(Slab* slab, bool to_os) noexcept {
  ArenaState& s = g_state;
  std::lock_guard<std::mutex> guard(s.lock);
  if (!to_os && s.cached.size < kCachedSlabs) {
    s.cached.push(index_of(s, slab));
    s.cached_count.store(s.cached.size, std::memory_order_relaxed);
    return;
  }
  os::decommit(slab, kSlabSize);
  s.released.push(index_of(s, slab));
  s.released_count.store(s.released.size, std::memory_order_relaxed);
  s.mapped_slabs.fetch_sub(1, std::memory_order_relaxed);
}

void release_cached_slabs() noexcept {
  ArenaState& s = g_state;
  std::lock_guard<std::mutex> guard(s.lock);
  while (s.cached.size > 0) {
    const std::uint32_t index = s.cached.pop();
    os::decommit(slab_at(s, index), kSlabSize);
    s.released.push(index);
    s.mapped_slabs.fetch_sub(1, std::memory_order_relaxed);
  }
  s.cached_count.store(0, std::memory_order_relaxed);
  s.released_count.store(s.released.size, std::memory_order_relaxed);
}

bool in_committed_slab(std::uintptr_t a) noexcept {
  // A block handed to this thread was carved after its slab was committed, and the frontier
  // only grows, so a relaxed read cannot say no for a live block.
  const std::uintptr_t base = g_arena_base.load(std::memory_order_relaxed);
  return a >= base && a < g_state.committed_end.load(std::memory_order_relaxed);
}

ArenaStats arena_stats() noexcept {
  const ArenaState& s = g_state;
  ArenaStats st;
  st.reserved_bytes = g_arena_base.load(std::memory_order_relaxed) == kNoArena ? 0 : kArenaSize;
  st.mapped_slabs = s.mapped_slabs.load(std::memory_order_relaxed);
  st.cached_slabs = s.cached_count.load(std::memory_order_relaxed);
  st.released_slabs = s.released_count.load(std::memory_order_relaxed);
  return st;
}

}  // namespace reheap::detail::msg
