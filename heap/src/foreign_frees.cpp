// Foreign frees counted by heap (foreign_frees.h).
#include "foreign_frees.h"

#include <atomic>
#include <mutex>

namespace reheap::detail {
namespace {

struct Entry {
  HeapId heap = 0;  // 0: free slot
  std::uint64_t frees = 0;
};

struct Table {
  std::mutex mutex;
  Entry entries[kForeignFreeHeapsTracked];
  std::uint64_t unattributed = 0;
  // Lets destroy() and saves skip the lock in a program that never misused a heap.
  std::atomic<bool> any{false};
};

// Constant-initialised and trivially destructible in effect (std::mutex has a constexpr
// constructor and nothing to release), so frees during static destruction still find it.
constinit Table g_table;

}  // namespace

void count_foreign_free(HeapId owner) noexcept {
  std::lock_guard<std::mutex> lock(g_table.mutex);
  g_table.any.store(true, std::memory_order_relaxed);
  Entry* vacant = nullptr;
  for (Entry& e : g_table.entries) {
    if (e.heap == owner) {
      ++e.frees;
      return;
    }
    if (e.heap == 0 && vacant == nullptr) vacant = &e;
  }
  if (vacant == nullptr) {
    ++g_table.unattributed;
    return;
  }
  *vacant = Entry{owner, 1};
}

std::uint64_t foreign_frees_of(HeapId heap) noexcept {
  if (!g_table.any.load(std::memory_order_relaxed)) return 0;
  std::lock_guard<std::mutex> lock(g_table.mutex);
  std::uint64_t frees = g_table.unattributed;
  for (const Entry& e : g_table.entries) {
    if (e.heap == heap) frees += e.frees;
  }
  return frees;
}

void forget_foreign_frees(HeapId heap) noexcept {
  if (!g_table.any.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(g_table.mutex);
  for (Entry& e : g_table.entries) {
    if (e.heap == heap) {
      e = Entry{};
      return;
    }
  }
}

}  // namespace reheap::detail
