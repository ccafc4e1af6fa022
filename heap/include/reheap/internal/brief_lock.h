// BriefLock: a mutex for critical sections of well under a microsecond that several threads take
// at high rates. The zone's chunk maps and heap cache, and a runtime's reactor table, use it: every
// spawn and every stop takes both, from whichever thread spawns and whichever worker stops.
//
// Why not std::mutex: glibc's mutex puts a thread that finds it taken to sleep in the kernel at
// once, and the holder then pays a futex wake on unlock. Each costs microseconds in a VM, many
// times the section waited for: with two workers spawning and stopping reactors, over a third of
// their samples were in those calls. This lock spins a bounded while first (the holder is running and about to
// leave), then sleeps on a futex like glibc's (the holder was preempted, or the section is long).
// Its states are those of Drepper's "Futexes Are Tricky": 0 free, 1 taken, 2 taken and a thread
// may sleep. It meets BasicLockable and Lockable (std::lock_guard, std::unique_lock); it is not
// recursive, and not fair. Linux only, like the rest of reheap.
//
// Internal (reheap/internal/): shared by the heap's zone and the runtime's reactor table, which are
// built separately; not a stable API, and not for programs.
#pragma once

#include <atomic>
#include <cstdint>

namespace reheap {

class BriefLock {
 public:
  BriefLock() noexcept = default;
  BriefLock(const BriefLock&) = delete;
  BriefLock& operator=(const BriefLock&) = delete;

  void lock() noexcept {
    if (!try_lock()) [[unlikely]] lock_contended();
  }
  bool try_lock() noexcept {
    std::uint32_t expected = 0;
    return state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void unlock() noexcept {
    if (state_.exchange(0, std::memory_order_release) == 2) [[unlikely]] wake_one();
  }

 private:
  [[gnu::noinline]] void lock_contended() noexcept;
  [[gnu::noinline]] void wake_one() noexcept;

  std::atomic<std::uint32_t> state_{0};
};

}  // namespace reheap
