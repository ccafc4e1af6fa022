// Moving a reactor to another worker: it keeps its state, its ActorRef, the messages waiting in
// its mailbox and its timers, and Reactor::worker() reports the new worker; bad requests throw.
// A move with open sockets: tcp_move_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap::move_test {
namespace {

using namespace std::chrono_literals;
using rttest::Gate;
using rttest::Log;
using rttest::Probe;

struct Item {
  std::uint32_t seq;
};
struct Hold {
  std::uint32_t unused;
};
struct Report {
  std::uint32_t unused;
};

struct Handled {
  std::uint32_t seq;
  int worker;
};

// Keeps every item in its heap and logs (item, worker); Report sends the sum of its items to the
// probe. Hold blocks it (and its worker) at the gate.
class Keeper : public Reactor {
 public:
  Keeper(Log<Handled>* log, Probe* probe, Gate* gate) : log_(log), probe_(probe), gate_(gate) {
    handle<&Keeper::on_item>();
    handle<&Keeper::on_hold>();
    handle<&Keeper::on_report>();
  }
  void on_item(const Item& i) {
    items_.push_back(i.seq);
    log_->add({i.seq, worker()});
  }
  void on_hold(const Hold&) { gate_->pass(); }
  void on_report(const Report&) {
    std::uint64_t sum = 0;
    for (std::uint32_t v : items_) sum += v;
    probe_->done(sum * 10 + static_cast<std::uint64_t>(worker()));
  }

 private:
  Log<Handled>* log_;
  Probe* probe_;
  Gate* gate_;
  std::vector<std::uint32_t> items_;
};

TEST(Move, AMovedReactorKeepsItsStateRefAndWaitingMessagesAndReportsItsNewWorker) {
  Log<Handled> log;
  Probe probe;
  Gate gate;
  Runtime rt(RuntimeConfig{.workers = 2});
  SpawnOptions on0;
  on0.worker = 0;
  const ActorRef keeper = rt.spawn<Keeper>(on0, &log, &probe, &gate);
  const ActorRef blocker = rt.spawn<Keeper>(on0, &log, &probe, &gate);
  for (std::uint32_t i = 0; i < 10; ++i) ASSERT_EQ(rt.send(keeper, Item{i}), SendResult::kOk);
  ASSERT_TRUE(log.wait_size(10));
  // Block worker 0, queue messages for the keeper there, and ask for the move meanwhile.
  ASSERT_EQ(rt.send(blocker, Hold{}), SendResult::kOk);
  ASSERT_TRUE(gate.wait_entered());
  for (std::uint32_t i = 10; i < 100; ++i) ASSERT_EQ(rt.send(keeper, Item{i}), SendResult::kOk);
  std::atomic<pid_t> mover_tid{0};
  std::thread mover([&] {
    mover_tid = rttest::thread_id();
    rt.move(keeper, 1);
  });
  ASSERT_TRUE(rttest::wait_until([&] { return mover_tid.load() != 0; }));
  ASSERT_TRUE(rttest::wait_blocked_in_futex(mover_tid.load()));  // the request is posted
  gate.open();
  mover.join();
  ASSERT_TRUE(log.wait_size(100));
  const std::vector<Handled> handled = log.items();
  for (std::uint32_t i = 0; i < 100; ++i) {
    EXPECT_EQ(handled[i].seq, i) << "lost or reordered by the move";
    EXPECT_EQ(handled[i].worker, i < 10 ? 0 : 1) << "item " << i;
  }
  ASSERT_EQ(rt.send(keeper, Report{}), SendResult::kOk);
  ASSERT_TRUE(probe.wait_for(1));
  EXPECT_EQ(probe.value(), (99u * 100u / 2u) * 10u + 1u) << "state lost, or worker() is stale";
  EXPECT_EQ(rt.stats(keeper).worker, 1);
  EXPECT_EQ(rt.stats(blocker).worker, 0);
}

// Ticks every 2 ms, logging the worker of each tick.
class Ticker : public Reactor {
 public:
  explicit Ticker(Log<Handled>* log) : log_(log) {}
  void on_start() override { start_timer(2ms, 2ms); }
  void on_timer(TimerId) override { log_->add({n_++, worker()}); }

 private:
  Log<Handled>* log_;
  std::uint32_t n_ = 0;
};

TEST(Move, TimersComeAlongAndFireOnTheNewWorker) {
  Log<Handled> log;
  Runtime rt(RuntimeConfig{.workers = 2});
  SpawnOptions on1;
  on1.worker = 1;
  const ActorRef ticker = rt.spawn<Ticker>(on1, &log);
  ASSERT_TRUE(log.wait_size(3));
  // Ticks logged before move() was called were on worker 1; a tick may still land on either side
  // of the move while it is under way, and one on worker 0 may be logged before move() returns.
  // So the log must read 1, 1, ..., 1, 0, 0, ...: one switch, after `before`.
  const std::size_t before = log.size();
  rt.move(ticker, 0);
  ASSERT_TRUE(log.wait_size(log.size() + 3));
  const std::vector<Handled> ticks = log.items();
  std::size_t first_on_0 = ticks.size();
  for (std::size_t i = 0; i < ticks.size(); ++i) {
    EXPECT_EQ(ticks[i].seq, i) << "the tick count (heap state) jumped";
    if (ticks[i].worker == 0 && first_on_0 == ticks.size()) first_on_0 = i;
    EXPECT_EQ(ticks[i].worker, i < first_on_0 ? 1 : 0) << "tick " << i << ": the timer fired on the old worker after the move";
  }
  EXPECT_GE(first_on_0, before) << "a tick fired on the new worker before the move was asked for";
  EXPECT_GE(ticks.size() - first_on_0, 3u) << "the timer keeps firing on the new worker";
}

TEST(Move, MovingBackAndForthWhileMessagesStreamLosesNothing) {
  Log<Handled> log;
  Probe probe;
  Gate gate;
  Runtime rt(RuntimeConfig{.workers = 2});
  const ActorRef keeper = rt.spawn<Keeper>(&log, &probe, &gate);
  constexpr std::uint32_t kBursts = rttest::kSanitized ? 50 : 200;
  constexpr std::uint32_t kBurst = 100;
  // One thread alternates bursts and moves, so moves happen mid-stream whatever the timing: the
  // burst before a move may still wait in the mailbox when it happens.
  for (std::uint32_t b = 0; b < kBursts; ++b) {
    for (std::uint32_t i = 0; i < kBurst; ++i) {
      ASSERT_EQ(rt.send(keeper, Item{b * kBurst + i}), SendResult::kOk);
    }
    rt.move(keeper, static_cast<int>(b % 2));
  }
  ASSERT_TRUE(log.wait_size(kBursts * kBurst));
  const std::vector<Handled> handled = log.items();
  unsigned workers = 0;
  for (std::uint32_t i = 0; i < kBursts * kBurst; ++i) {
    ASSERT_EQ(handled[i].seq, i) << "lost or reordered by a move";
    workers |= 1u << handled[i].worker;
  }
  EXPECT_EQ(workers, 3u) << "the messages were not handled on both workers";
}

TEST(Move, BadMoveRequestsThrowAndAMoveToTheCurrentWorkerChangesNothing) {
  Log<Handled> log;
  Probe probe;
  Gate gate;
  Runtime rt(RuntimeConfig{.workers = 2});
  SpawnOptions on1;
  on1.worker = 1;
  const ActorRef r = rt.spawn<Keeper>(on1, &log, &probe, &gate);
  EXPECT_THROW(rt.move(r, 2), std::out_of_range);
  EXPECT_THROW(rt.move(r, -5), std::out_of_range);
  rt.move(r, 1);
  EXPECT_EQ(rt.stats(r).worker, 1);
  ASSERT_EQ(rt.send(r, Item{7}), SendResult::kOk);
  ASSERT_TRUE(log.wait_size(1));
  EXPECT_EQ(log.items()[0].worker, 1);
  ASSERT_TRUE(rt.stop(r));
  ASSERT_TRUE(rt.wait_stopped(r));
  EXPECT_THROW(rt.move(r, 0), std::runtime_error);
}

}  // namespace
}  // namespace reheap::move_test
