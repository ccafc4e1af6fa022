// SlotGenerations: lock-free per-slot maxima (see slot_generations.h).
#include "reactor/slot_generations.h"

#include <atomic>

#include "reheap/actor_ref.h"

namespace reheap::detail {
namespace {

constexpr std::uint32_t kSlots = std::uint32_t{1} << ActorRef::kSlotBits;
static_assert(ActorRef::kMaxGeneration <= UINT16_MAX, "a generation must fit the counter");

// Zero-initialized, so it lives in .bss: untouched slots cost no memory.
std::atomic<std::uint16_t> highest_issued[kSlots];

}  // namespace

std::uint32_t claim_slot_generation(std::uint32_t slot, std::uint32_t at_least) noexcept {
  std::atomic<std::uint16_t>& highest = highest_issued[slot % kSlots];
  std::uint16_t seen = highest.load(std::memory_order_relaxed);
  for (;;) {
    const std::uint32_t next = seen + 1u > at_least ? seen + 1u : at_least;
    if (next > ActorRef::kMaxGeneration) return 0;
    // Relaxed is enough: each claim only needs to see every earlier claim's value, which the
    // modification order of this one atomic gives.
    if (highest.compare_exchange_weak(seen, static_cast<std::uint16_t>(next), std::memory_order_relaxed)) {
      return next;
    }
  }
}

void note_slot_generation(std::uint32_t slot, std::uint32_t generation) noexcept {
  std::atomic<std::uint16_t>& highest = highest_issued[slot % kSlots];
  std::uint16_t seen = highest.load(std::memory_order_relaxed);
  while (seen < generation &&
         !highest.compare_exchange_weak(seen, static_cast<std::uint16_t>(generation), std::memory_order_relaxed)) {
  }
}

}  // namespace reheap::detail
