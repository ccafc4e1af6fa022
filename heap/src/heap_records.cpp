// Heap records (heap_records.h).
#include "heap_records.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace reheap::detail {
namespace {

struct ForeignFrees {
  HeapId heap = 0;  // 0: free slot
  std::uint64_t frees = 0;
};

struct Records {
  std::mutex mutex;
  ForeignFrees foreign[kForeignFreeHeapsTracked];
  std::uint64_t unattributed = 0;
  // Lets destroy() and saves skip the lock for foreign frees in a program that never misused a
  // heap.
  std::atomic<bool> any_foreign{false};
  std::unordered_map<HeapId, std::uint64_t>* saved_state = nullptr;  // created by the first save
  std::atomic<bool> any_saved{false};  // lets destroy() skip the lock before any save
};

// Constant-initialised and never destroyed, so frees and destroys during static destruction still
// find it.
constinit Records g_records;

}  // namespace

void count_foreign_free(HeapId owner) noexcept {
  std::lock_guard<std::mutex> lock(g_records.mutex);
  g_records.any_foreign.store(true, std::memory_order_relaxed);
  ForeignFrees* vacant = nullptr;
  for (ForeignFrees& e : g_records.foreign) {
    if (e.heap == owner) {
      ++e.frees;
      return;
    }
    if (e.heap == 0 && vacant == nullptr) vacant = &e;
  }
  if (vacant == nullptr) {
    ++g_records.unattributed;
    return;
  }
  *vacant = ForeignFrees{owner, 1};
}

std::uint64_t foreign_frees_of(HeapId heap) noexcept {
  if (!g_records.any_foreign.load(std::memory_order_relaxed)) return 0;
  std::lock_guard<std::mutex> lock(g_records.mutex);
  std::uint64_t frees = g_records.unattributed;
  for (const ForeignFrees& e : g_records.foreign) {
    if (e.heap == heap) frees += e.frees;
  }
  return frees;
}

void note_saved_state(HeapId heap, std::uint64_t snapshot_id) {
  std::lock_guard<std::mutex> lock(g_records.mutex);
  if (g_records.saved_state == nullptr) {
    g_records.saved_state = new std::unordered_map<HeapId, std::uint64_t>();
    g_records.any_saved.store(true, std::memory_order_relaxed);
  }
  (*g_records.saved_state)[heap] = snapshot_id;
}

std::optional<std::uint64_t> saved_state_of(HeapId heap) noexcept {
  std::lock_guard<std::mutex> lock(g_records.mutex);
  if (g_records.saved_state == nullptr) return std::nullopt;
  const auto it = g_records.saved_state->find(heap);
  if (it == g_records.saved_state->end()) return std::nullopt;
  return it->second;
}

void forget_heap_records(HeapId heap) noexcept {
  if (!g_records.any_saved.load(std::memory_order_relaxed) &&
      !g_records.any_foreign.load(std::memory_order_relaxed)) {
    return;
  }
  std::lock_guard<std::mutex> lock(g_records.mutex);
  if (g_records.saved_state != nullptr) g_records.saved_state->erase(heap);
  if (!g_records.any_foreign.load(std::memory_order_relaxed)) return;
  for (ForeignFrees& e : g_records.foreign) {
    if (e.heap == heap) {
      e = ForeignFrees{};
      return;
    }
  }
}

}  // namespace reheap::detail
