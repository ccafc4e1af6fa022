// The slots a fatal signal's handler flushes (see fatal_flush.h).
//
// Slots live in blocks that are never freed and are linked as they are made, newest first, so
// that the handler walks them with atomic loads alone while ordinary code may be adding a block.
// Taking and giving back slots goes through a free list under a mutex: ordinary code only.
#include "recording/fatal_flush.h"

#include <unistd.h>

#include <cstddef>
#include <mutex>
#include <new>

#include "reheap/heap_scope.h"

namespace reheap::detail::recording {
namespace {

constexpr std::size_t kSlotsPerBlock = 256;

struct SlotBlock {
  FatalFlushSlot slots[kSlotsPerBlock];
  SlotBlock* next = nullptr;  // older block (set before the block is published)
};

// Constant-initialized, so that the handler reads them without running any initialization, and
// never destroyed in a way that matters: a recorder may be torn down during static destruction.
constinit std::mutex g_mutex;
constinit FatalFlushSlot* g_free = nullptr;            // under g_mutex
constinit std::atomic<SlotBlock*> g_newest{nullptr};   // written under g_mutex, read anywhere

}  // namespace

void FatalFlushSlot::lock() noexcept {
  std::uint32_t expected = 0;
  while (!state_.compare_exchange_weak(expected, kOwner, std::memory_order_acquire, std::memory_order_relaxed)) {
    if ((expected & kClaimed) != 0) {
      // A fatal signal's handler has read (or is reading) what this slot guards, and the process
      // is about to end: leave it as it is. pause() returns after any handler ran; keep waiting.
      for (;;) ::pause();
    }
    expected = 0;
  }
}

FatalFlushSlot* take_fatal_flush_slot(FatalFlushable* owner) {
  HeapScope system(nullptr);  // the slots are the process's
  std::lock_guard guard(g_mutex);
  if (g_free == nullptr) {
    auto* block = new SlotBlock;
    for (std::size_t i = kSlotsPerBlock; i-- > 0;) {
      block->slots[i].next_free_ = g_free;
      g_free = &block->slots[i];
    }
    block->next = g_newest.load(std::memory_order_relaxed);
    g_newest.store(block, std::memory_order_release);
  }
  FatalFlushSlot* slot = g_free;
  g_free = slot->next_free_;
  slot->next_free_ = nullptr;
  {
    FatalFlushSlot::Locked locked(*slot);
    slot->set_owner(owner);
  }
  return slot;
}

void give_back_fatal_flush_slot(FatalFlushSlot* slot) noexcept {
  if (slot == nullptr) return;
  {
    FatalFlushSlot::Locked locked(*slot);
    slot->set_owner(nullptr);
  }
  std::lock_guard guard(g_mutex);
  slot->next_free_ = g_free;
  g_free = slot;
}

std::uint64_t flush_every_recorder_in_signal_handler(const FatalFlushSlot* except) noexcept {
  std::uint64_t flushed = 0;
  for (SlotBlock* b = g_newest.load(std::memory_order_acquire); b != nullptr; b = b->next) {
    for (FatalFlushSlot& slot : b->slots) {
      if (&slot == except) continue;
      // Claimed for good, whatever happens next: a second fatal signal (another thread's) finds it
      // claimed and writes nothing twice.
      const std::uint32_t before = slot.state_.fetch_or(FatalFlushSlot::kClaimed, std::memory_order_acq_rel);
      if ((before & (FatalFlushSlot::kOwner | FatalFlushSlot::kClaimed)) != 0) continue;
      FatalFlushable* owner = slot.owner_.load(std::memory_order_acquire);
      if (owner != nullptr && owner->flush_in_signal_handler()) ++flushed;
    }
  }
  return flushed;
}

}  // namespace reheap::detail::recording
