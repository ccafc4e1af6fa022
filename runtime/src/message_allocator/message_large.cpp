#include "message_allocator/message_large.h"

#include <atomic>
#include <cstdint>
#include <mutex>

#include "os/message_os.h"

namespace reheap::detail::msg {
namespace {

// Linear probing keyed by page number; deletion shifts later entries back, so there are no
// tombstones. The table doubles at half load.
struct Entry {
  std::uintptr_t page = 0;  // 0: empty (page 0 is never mapped)
  std::size_t bytes = 0;
};

struct Registry {
  std::mutex lock;
  Entry* table = nullptr;
  std::size_t capacity = 0;  // a power of two, or 0 before the first block
  std::size_t count = 0;
  std::atomic<std::size_t> blocks{0};
  std::atomic<std::size_t> bytes{0};

  std::size_t slot_of(std::uintptr_t page) const noexcept {
    // Fibonacci hashing spreads consecutive pages over the table.
    return static_cast<std::size_t>((page * 0x9E3779B97F4A7C15ull) >> 20) & (capacity - 1);
  }

  Entry* find(std::uintptr_t page) noexcept {
    if (capacity == 0) return nullptr;
    for (std::size_t i = slot_of(page);; i = (i + 1) & (capacity - 1)) {
      if (table[i].page == page) return &table[i];
      if (table[i].page == 0) return nullptr;
    }
  }

  void place(Entry e) noexcept {
    std::size_t i = slot_of(e.page);
    while (table[i].page != 0) i = (i + 1) & (capacity - 1);
    table[i] = e;
  }

  bool grow() noexcept {
    const std::size_t new_capacity = capacity == 0 ? 256 : capacity * 2;
    auto* fresh = static_cast<Entry*>(os::map(new_capacity * sizeof(Entry)));
    if (fresh == nullptr) return false;
    Entry* old = table;
    const std::size_t old_capacity = capacity;
    table = fresh;
    capacity = new_capacity;
    for (std::size_t i = 0; i < old_capacity; ++i) {
      if (old[i].page != 0) place(old[i]);
    }
    if (old != nullptr) os::unmap(old, old_capacity * sizeof(Entry));
    return true;
  }

  void erase(Entry* e) noexcept {
    std::size_t hole = static_cast<std::size_t>(e - table);
    for (std::size_t i = (hole + 1) & (capacity - 1); table[i].page != 0; i = (i + 1) & (capacity - 1)) {
      // An entry moves into the hole if its home slot is not cyclically in (hole, i].
      const std::size_t home = slot_of(table[i].page);
      const bool home_after_hole = ((i - home) & (capacity - 1)) < ((i - hole) & (capacity - 1));
      if (!home_after_hole) {
        table[hole] = table[i];
        hole = i;
      }
    }
    table[hole] = Entry{};
  }
};

constinit Registry g_registry;

std::uintptr_t page_of(const void* p) noexcept {
  return reinterpret_cast<std::uintptr_t>(p) / os::kPageSize;
}

}  // namespace

void* large_allocate(std::size_t size) noexcept {
  const std::size_t bytes = (size + os::kPageSize - 1) & ~(os::kPageSize - 1);
  void* p = os::map(bytes);
  if (p == nullptr) return nullptr;
  Registry& r = g_registry;
  std::lock_guard<std::mutex> guard(r.lock);
  if (2 * (r.count + 1) > r.capacity && !r.grow()) {
    os::unmap(p, bytes);
    return nullptr;
  }
  r.place(Entry{page_of(p), bytes});
  ++r.count;
  r.blocks.store(r.count, std::memory_order_relaxed);
  r.bytes.store(r.bytes.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
  return p;
}

bool large_deallocate(void* p) noexcept {
  std::size_t bytes = 0;
  {
    Registry& r = g_registry;
    std::lock_guard<std::mutex> guard(r.lock);
    if (reinterpret_cast<std::uintptr_t>(p) % os::kPageSize != 0) return false;
    Entry* e = r.find(page_of(p));
    if (e == nullptr) return false;
    bytes = e->bytes;
    r.erase(e);
    --r.count;
    r.blocks.store(r.count, std::memory_order_relaxed);
    r.bytes.store(r.bytes.load(std::memory_order_relaxed) - bytes, std::memory_order_relaxed);
  }
  // Unmapped outside the lock: the range is no longer registered, and nobody else may use it.
  os::unmap(p, bytes);
  return true;
}

std::size_t large_usable_size(const void* p) noexcept {
  Registry& r = g_registry;
  std::lock_guard<std::mutex> guard(r.lock);
  if (reinterpret_cast<std::uintptr_t>(p) % os::kPageSize != 0) return 0;
  const Entry* e = r.find(page_of(p));
  return e == nullptr ? 0 : e->bytes;
}

LargeStats large_stats() noexcept {
  return {g_registry.blocks.load(std::memory_order_relaxed),
          g_registry.bytes.load(std::memory_order_relaxed)};
}

}  // namespace reheap::detail::msg
