// BriefLock's slow paths (brief_lock.h).
#include "reheap/internal/brief_lock.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace reheap {
namespace {

// Spins before sleeping. A section this lock guards takes well under a microsecond; a pause is
// 10 to 140 cycles depending on the core, so 32 of them outwait a running holder on most cores
// and cost less than one futex round trip when the holder is not running.
constexpr int kSpins = 32;

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t), "the futex word is the atomic itself");

void futex(std::atomic<std::uint32_t>* word, int op, std::uint32_t value) noexcept {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op | FUTEX_PRIVATE_FLAG, value, nullptr, nullptr, 0);
}

}  // namespace

void BriefLock::lock_contended() noexcept {
  for (int i = 0; i < kSpins; ++i) {
    cpu_relax();
    std::uint32_t expected = 0;
    if (state_.load(std::memory_order_relaxed) == 0 &&
        state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed)) {
      return;
    }
  }
  // From here the lock is taken as 2 ("someone may sleep"), so the unlock that frees it wakes a
  // sleeper even if this thread was the only one and took it without sleeping.
  while (state_.exchange(2, std::memory_order_acquire) != 0) futex(&state_, FUTEX_WAIT, 2);
}

void BriefLock::wake_one() noexcept { futex(&state_, FUTEX_WAKE, 1); }

}  // namespace reheap
