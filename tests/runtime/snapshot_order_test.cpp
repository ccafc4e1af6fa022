// Runtime::snapshot is ordered like a message from the calling thread: it saves the reactor after
// its on_start (or on_restored, with its timers back) and after every message that thread sent it
// before the call. And a restore refused for its options takes nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap::snapshot_order_test {
namespace {

using namespace std::chrono_literals;
using rttest::Log;
using rttest::TempDir;

struct Add {
  std::uint64_t n;
};
struct Report {
  ActorRef to;
};
struct Seen {
  bool started;
  std::uint64_t sum;
  std::uint64_t adds;
  std::uint64_t ticks;
  std::uint64_t restored;
};

// Sums what it is sent and counts the ticks of the timer its on_start arms.
class Counter : public Reactor {
 public:
  Counter() {
    handle<&Counter::on_add>();
    handle<&Counter::on_report>();
  }
  void on_start() override {
    seen_.started = true;
    start_timer(2ms, 2ms);
  }
  void on_restored() override { ++seen_.restored; }
  void on_timer(TimerId) override { ++seen_.ticks; }
  void on_add(const Add& a) {
    seen_.sum += a.n;
    ++seen_.adds;
  }
  void on_report(const Report& r) { send(r.to, seen_); }

 private:
  Seen seen_{false, 0, 0, 0, 0};
};

class Reporter : public Reactor {
 public:
  explicit Reporter(Log<Seen>* log) : log_(log) { handle<&Reporter::on_seen>(); }
  void on_seen(const Seen& s) { log_->add(s); }

 private:
  Log<Seen>* log_;
};

class SnapshotOrderTest : public testing::Test {
 protected:
  Seen report(ActorRef counter) {
    const std::size_t before = log.size();
    EXPECT_EQ(rt.send(counter, Report{reporter}), SendResult::kOk);
    EXPECT_TRUE(log.wait_size(before + 1));
    return log.size() > before ? log.items().back() : Seen{};
  }
  void stop(ActorRef r) {
    ASSERT_TRUE(rt.stop(r));
    ASSERT_TRUE(rt.wait_stopped(r));
  }

  TempDir dir;
  Log<Seen> log;
  Runtime rt{RuntimeConfig{.workers = 2}};
  ActorRef reporter = rt.spawn<Reporter>(&log);
};

TEST_F(SnapshotOrderTest, ASnapshotHoldsEverythingTheCallingThreadSentBeforeIt) {
  SpawnOptions on1;
  on1.worker = 1;
  ActorRef counter = rt.spawn<Counter>(on1);
  std::uint64_t sum = 0;
  for (std::uint64_t round = 0; round < 8; ++round) {
    for (std::uint64_t i = 1; i <= 200; ++i) {
      ASSERT_EQ(rt.send(counter, Add{i}), SendResult::kOk);
      sum += i;
    }
    rt.snapshot(counter, dir / "counter.snap");  // no wait for the adds
    stop(counter);
    ASSERT_EQ(rt.restore(dir / "counter.snap"), counter);
    const Seen seen = report(counter);
    EXPECT_EQ(seen.adds, (round + 1) * 200) << "round " << round;
    EXPECT_EQ(seen.sum, sum) << "round " << round;
    EXPECT_EQ(seen.restored, round + 1);
  }
}

TEST_F(SnapshotOrderTest, ASnapshotRightAfterASpawnOrARestoreKeepsTheStartAndTheTimers) {
  for (int round = 0; round < 5; ++round) {
    const ActorRef counter = rt.spawn<Counter>();
    rt.snapshot(counter, dir / "fresh.snap");  // at once: on_start may not have run yet
    stop(counter);
    ASSERT_EQ(rt.restore(dir / "fresh.snap"), counter);
    rt.snapshot(counter, dir / "restored.snap");  // at once: on_restored may not have run yet
    stop(counter);
    ASSERT_EQ(rt.restore(dir / "restored.snap"), counter);
    const Seen first = report(counter);
    EXPECT_TRUE(first.started) << "saved before on_start, round " << round;
    EXPECT_EQ(first.restored, 2u);
    // The timer on_start armed came back with both restores: it keeps ticking.
    EXPECT_TRUE(rttest::wait_until([&] { return report(counter).ticks > first.ticks + 3; }))
        << "round " << round;
    stop(counter);
  }
}

TEST_F(SnapshotOrderTest, ARestoreOntoAWorkerThatDoesNotExistThrowsAndTakesNothing) {
  const ActorRef counter = rt.spawn<Counter>();
  rt.snapshot(counter, dir / "counter.snap");
  stop(counter);
  const std::size_t reactors = rt.stats().reactors;
  ReactorRestoreOptions pinned;
  pinned.worker = 9;
  EXPECT_THROW(rt.restore(dir / "counter.snap", pinned), std::out_of_range);
  ReactorRestoreOptions through_spawn;
  through_spawn.spawn.worker = 2;
  EXPECT_THROW(rt.restore(dir / "counter.snap", through_spawn), std::out_of_range);
  EXPECT_EQ(rt.stats().reactors, reactors);
  EXPECT_FALSE(rt.alive(counter));
  // The file and the reference are still free to use; the runtime then shuts down as usual.
  pinned.worker = 1;
  ASSERT_EQ(rt.restore(dir / "counter.snap", pinned), counter);
  EXPECT_TRUE(report(counter).started);
  EXPECT_EQ(rt.stats(counter).worker, 1);
}

TEST_F(SnapshotOrderTest, MovingToAnyWorkerIsRefused) {
  const ActorRef counter = rt.spawn<Counter>();
  const int worker = rt.stats(counter).worker;
  EXPECT_THROW(rt.move(counter, kAnyWorker), std::out_of_range);
  EXPECT_EQ(rt.stats(counter).worker, worker);
  EXPECT_EQ(rt.stats(counter).moves, 0u);
}

}  // namespace
}  // namespace reheap::snapshot_order_test
