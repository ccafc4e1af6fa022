// Retention in a runtime (zone.h, "Retention"): a reactor's heap keeps the huge blocks it frees,
// and the worker, once it has been idle half a second, purges their pages; the reactor still
// finds its next huge block where the kept one was. A freed burst of small objects goes the same
// way (purged lanes), while the reactor's live objects stay.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "scheduling/idle_purge.h"
#include "reheap/runtime.h"
#include "reheap/zone.h"
#include "runtime_support.h"

// A named namespace: message type ids go by the types' names.
namespace reheap::retention_purge_test {
namespace {

using rttest::Probe;

constexpr std::size_t MiB = std::size_t{1} << 20;

struct Again {};

// Allocates, writes and frees an 8 MiB block on start, and again on Again, telling the probe
// whether the second block came where the first was.
class HugeFreer : public Reactor {
 public:
  explicit HugeFreer(Probe* done) : done_(done) { handle<&HugeFreer::on_again>(); }
  void on_start() override {
    first_ = cycle();
    done_->done(1);
  }

 private:
  // The block's address, as a number: the block itself is gone when it is compared.
  std::uintptr_t cycle() {
    auto* p = new char[8 * MiB];
    std::memset(p, 1, 8 * MiB);
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    delete[] p;
    return at;
  }
  void on_again(const Again&) { done_->done(cycle() == first_ ? 2 : 3); }
  Probe* done_;
  std::uintptr_t first_ = 0;
};

TEST(RetentionRuntime, AnIdleWorkerPurgesWhatItsReactorsKeep) {
  const RetainConfig before = Zone::set_retention(RetainConfig{64 * MiB, 256 * MiB, 60'000});
  {
    Runtime rt(RuntimeConfig{.workers = 1});
    Probe done;
    const ActorRef r = rt.spawn<HugeFreer>(&done);
    ASSERT_TRUE(done.wait_for(1));
    ASSERT_TRUE(rt.wait_idle());
    EXPECT_GE(Zone::retained_resident_bytes(), 8 * MiB) << "the freed block is kept, resident";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (Zone::retained_resident_bytes() != 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(Zone::retained_resident_bytes(), 0u) << "the idle worker purged it";
    ASSERT_EQ(rt.send(r, Again{}), SendResult::kOk);
    ASSERT_TRUE(done.wait_for(2));
    EXPECT_EQ(done.value(), 2u) << "the next huge block went where the kept one was";
    rt.stop(r);
  }
  Zone::set_retention(before);
}

// Keeps 1 MiB of 96-byte objects, then allocates, writes and frees a 32 MiB burst of them on
// start; on Again checks its live objects and allocates the burst again (taking the purged lanes
// back).
class SmallBurst : public Reactor {
 public:
  explicit SmallBurst(Probe* done) : done_(done) { handle<&SmallBurst::on_again>(); }
  void on_start() override {
    live_.reserve(MiB / kSize);
    for (std::size_t i = 0; i < MiB / kSize; ++i) live_.push_back(filled(0x11));
    burst();
    done_->done(1);
  }

 private:
  static constexpr std::size_t kSize = 96;
  static char* filled(int pattern) {
    auto* p = new char[kSize];
    std::memset(p, pattern, kSize);
    return p;
  }
  // The burst's blocks are chained through their first word, so that nothing but them grows.
  void burst() {
    char* head = nullptr;
    for (std::size_t i = 0; i < 32 * MiB / kSize; ++i) {
      char* p = filled(0x22);
      std::memcpy(p, &head, sizeof head);
      head = p;
    }
    while (head != nullptr) {
      char* next = nullptr;
      std::memcpy(&next, head, sizeof next);
      delete[] head;
      head = next;
    }
  }
  void on_again(const Again&) {
    bool intact = true;
    for (char* p : live_) intact &= p[0] == 0x11 && p[kSize - 1] == 0x11;
    burst();
    done_->done(intact ? 2 : 3);
  }
  Probe* done_;
  std::vector<char*> live_;
};

// Polled every 100 ms, as a monitor would: Runtime::stats(ref) wakes the reactor's worker (the
// stats are read there), but a wake-up that runs no reactor does not put off the purge.
TEST(RetentionRuntime, AnIdleWorkerGivesBackAFreedBurstOfSmallObjectsWhileAMonitorPolls) {
  Runtime rt(RuntimeConfig{.workers = 1});
  Probe done;
  const ActorRef r = rt.spawn<SmallBurst>(&done);
  ASSERT_TRUE(done.wait_for(1));
  ASSERT_TRUE(rt.wait_idle());
  const ReactorStats burst = rt.stats(r);
  ASSERT_GE(burst.heap_committed_bytes, 32 * MiB) << "the freed burst is still committed";
  ReactorStats polled = burst;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (polled.heap_committed_bytes > 4 * MiB && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    polled = rt.stats(r);
  }
  EXPECT_LE(polled.heap_committed_bytes, 4 * MiB) << "the idle worker did not purge the burst's lanes";
  EXPECT_EQ(polled.heap_live_bytes, burst.heap_live_bytes);
  ASSERT_EQ(rt.send(r, Again{}), SendResult::kOk);
  ASSERT_TRUE(done.wait_for(2));
  EXPECT_EQ(done.value(), 2u) << "a live object changed";
  rt.stop(r);
}

// Whether the runtime's idle purges reach `n` within 5 s (a loaded machine may take a while to
// leave the worker asleep half a second).
bool purges_reach(Runtime& rt, std::uint64_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (rt.stats().idle_purges < n && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return rt.stats().idle_purges >= n;
}

// Sets how long an idle worker waits before it purges (runtime/src/scheduling/idle_purge.h) for a scope.
class IdlePurgeDelay {
 public:
  explicit IdlePurgeDelay(std::chrono::milliseconds delay)
      : before_(detail::set_idle_purge_delay(delay)) {}
  IdlePurgeDelay(const IdlePurgeDelay&) = delete;
  IdlePurgeDelay& operator=(const IdlePurgeDelay&) = delete;
  ~IdlePurgeDelay() { detail::set_idle_purge_delay(before_); }

 private:
  std::chrono::milliseconds before_;
};

// A purge finds nothing new to give back until the reactors run again, so the worker purges once
// per idle spell: a monitor that keeps waking an idle runtime does not make it purge over and over.
TEST(RetentionRuntime, AWorkerPurgesOncePerIdleSpellNotAtEveryWakeUp) {
  // The worker purges 20 ms into an idle spell here, and the monitor below wakes it every 60 ms:
  // a purge that a wake-up running nothing brought about would come between two wake-ups, while
  // the monitor polls, instead of half a second after the last.
  const IdlePurgeDelay short_delay(std::chrono::milliseconds(20));
  Runtime rt(RuntimeConfig{.workers = 1});
  Probe done;
  const ActorRef r = rt.spawn<SmallBurst>(&done);
  ASSERT_TRUE(done.wait_for(1));
  ASSERT_TRUE(rt.wait_idle());
  ASSERT_TRUE(purges_reach(rt, 1)) << "no purge after the reactor ran";
  for (int i = 0; i < 10; ++i) {  // woken every 60 ms, with nothing to run
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    static_cast<void>(rt.stats(r));
  }
  EXPECT_EQ(rt.stats().idle_purges, 1u) << "purged again without any reactor having run";
  ASSERT_EQ(rt.send(r, Again{}), SendResult::kOk);
  ASSERT_TRUE(done.wait_for(2));
  EXPECT_TRUE(purges_reach(rt, 2)) << "the reactor ran again, and no purge followed";
  EXPECT_EQ(rt.stats().idle_purges, 2u);
  rt.stop(r);
}

}  // namespace
}  // namespace reheap::retention_purge_test
