// The harness alone: an "allocator" that hands out the blocks of a per-thread ring of 1 KiB
// slots in turn and whose free does nothing. Every message still gets its own block (there are
// more slots than messages in flight), so the rings, the header writes and reads and the cache
// traffic of the message lines are all there; what is left out is the allocator's own work.
#include <cstddef>
#include <string>

#include "message_variant.h"

namespace msgbench {
namespace {

constexpr std::size_t kSlots = 4096;  // > SpscRing capacity + pingpong window, per thread
constexpr std::size_t kSlotSize = 1024;

struct alignas(64) Slots {
  char bytes[kSlots][kSlotSize];
  std::size_t next = 0;
};
thread_local Slots* t_slots = nullptr;

}  // namespace

[[gnu::noinline]] void* message_allocate(std::size_t) noexcept {
  if (t_slots == nullptr) t_slots = new Slots;  // once per thread, outside the timed steady state
  return t_slots->bytes[t_slots->next++ % kSlots];
}

[[gnu::noinline]] void message_free(void* p) noexcept { asm volatile("" : : "r"(p) : "memory"); }

const char* variant_name() noexcept { return "harness"; }

std::string variant_verify() { return "no-op allocator (per-thread ring of 1 KiB slots)"; }

}  // namespace msgbench
