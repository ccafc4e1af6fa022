// BriefLock (reheap/internal/brief_lock.h): mutual exclusion under contention, and a thread that had to
// sleep is woken when the holder leaves.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "reheap/internal/brief_lock.h"

namespace {

using reheap::BriefLock;

// Whether thread `tid` of this process sleeps in a futex wait within `timeout`: the first field of
// /proc/self/task/<tid>/syscall is the number of the system call it is blocked in.
bool sleeps_in_futex(pid_t tid, std::chrono::seconds timeout) {
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/syscall";
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::ifstream in(path);
    long number = -1;
    if ((in >> number) && number == SYS_futex) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

TEST(BriefLock, ExcludesUnderContention) {
  BriefLock lock;
  // Not atomic: only the lock keeps the threads' increments from being lost.
  std::uint64_t counter = 0;
  constexpr int kThreads = 4;
  constexpr int kRounds = 50'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard guard(lock);
        const std::uint64_t seen = counter;
        if (i % 64 == 0) std::this_thread::yield();  // widen the window a lost update needs
        counter = seen + 1;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter, std::uint64_t{kThreads} * kRounds);
}

TEST(BriefLock, TryLockFailsWhileHeldAndSucceedsAfter) {
  BriefLock lock;
  ASSERT_TRUE(lock.try_lock());
  bool taken_elsewhere = true;
  std::thread([&] { taken_elsewhere = lock.try_lock(); }).join();
  EXPECT_FALSE(taken_elsewhere);
  lock.unlock();
  std::thread([&] {
    taken_elsewhere = lock.try_lock();
    if (taken_elsewhere) lock.unlock();
  }).join();
  EXPECT_TRUE(taken_elsewhere);
}

// A holder that stays far longer than the spin sends the waiters to sleep on the futex; each must
// be woken in turn when the lock is handed on, and none may take it while it is held.
TEST(BriefLock, WakesSleepersWhenTheHolderLeaves) {
  BriefLock lock;
  std::atomic<bool> held{false};
  std::atomic<int> entered{0};
  std::atomic<int> overlapped{0};
  lock.lock();
  held = true;
  std::atomic<pid_t> ids[3] = {0, 0, 0};
  std::vector<std::thread> waiters;
  for (int t = 0; t < 3; ++t) {
    waiters.emplace_back([&, t] {
      ids[t] = static_cast<pid_t>(::syscall(SYS_gettid));
      lock.lock();
      if (held.exchange(true)) overlapped.fetch_add(1);
      entered.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // sleepers pile up behind this one
      held = false;
      lock.unlock();
    });
  }
  // Every waiter spins, then sleeps on the futex; the holder stays until all three sleep.
  for (std::atomic<pid_t>& id : ids) {
    while (id.load() == 0) std::this_thread::yield();  // set before the thread's first lock()
    EXPECT_TRUE(sleeps_in_futex(id.load(), std::chrono::seconds(30)))
        << "waiter " << id.load() << " never went to sleep on the lock";
  }
  EXPECT_EQ(entered.load(), 0);
  held = false;
  lock.unlock();
  for (std::thread& t : waiters) t.join();
  EXPECT_EQ(entered.load(), 3);
  EXPECT_EQ(overlapped.load(), 0);
}

}  // namespace
