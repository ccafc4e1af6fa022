// Request/reply (reheap/request.h) under the test kit: between two reactors of a TestRuntime with
// virtual time, and a recorded asker replayed with Replay, which gets the recorded replies and
// timeouts without the replier running.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "reheap/reactor.h"
#include "reheap/runtime.h"
#include "reheap/testing/replay.h"
#include "reheap/testing/test_runtime.h"
#include "replay_support.h"

namespace reheap::request_replay_test {
namespace {

using namespace std::chrono_literals;
using reheap::testing::Replay;
using reheap::testing::TestRuntime;

struct Ping {
  std::uint64_t n;
};
struct Pong {
  std::uint64_t n;
};
// Answered `delay_ns` later, from a timer of the replier.
struct Slow {
  std::uint64_t n;
  std::int64_t delay_ns;
};
struct Go {
  std::uint64_t to;
  std::uint32_t pings;
  std::uint32_t slow;
  std::int64_t slow_delay_ns;
  std::int64_t timeout_ns;
};
struct Tally {
  std::uint32_t unused;
};
struct Totals {
  std::uint64_t ok;
  std::uint64_t timeouts;
  std::uint64_t sum;  // of the replies' n
  std::uint64_t ids;  // of the answered requests, xored
};

class Echo : public Reactor {
 public:
  Echo() {
    handle<&Echo::on_ping>();
    handle<&Echo::on_slow>();
  }
  void on_ping(const Ping& p) { reply(Pong{p.n + 1000}); }
  void on_slow(const Slow& s) {
    held_.push_back(Held{reply_address(), s.n, start_timer(std::chrono::nanoseconds(s.delay_ns))});
  }
  void on_timer(TimerId id) override {
    for (std::size_t i = 0; i < held_.size(); ++i) {
      if (held_[i].timer != id) continue;
      reply(held_[i].to, Pong{held_[i].n + 1000});
      held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
  }

 private:
  struct Held {
    ReplyAddress to;
    std::uint64_t n;
    TimerId timer;
  };
  std::vector<Held> held_;
};

class Asker : public Reactor {
 public:
  Asker() {
    handle<&Asker::on_go>();
    handle<&Asker::on_tally>();
  }
  void on_go(const Go& g) {
    const auto timeout = std::chrono::nanoseconds(g.timeout_ns);
    for (std::uint32_t i = 0; i < g.pings; ++i) request<&Asker::on_pong>(ActorRef(g.to), Ping{++n_}, timeout);
    for (std::uint32_t i = 0; i < g.slow; ++i) {
      request<&Asker::on_pong>(ActorRef(g.to), Slow{++n_, g.slow_delay_ns}, timeout);
    }
  }
  void on_pong(const Response<Pong>& r) {
    if (r.ok()) {
      ++totals_.ok;
      totals_.sum += r.value().n;
      totals_.ids ^= r.id();
    } else if (r.error() == RequestError::kTimeout) {
      ++totals_.timeouts;
    }
    answered_at_.push_back(steady_now().time_since_epoch().count());
  }
  void on_tally(const Tally&) { reply(totals_); }

  const Totals& totals() const noexcept { return totals_; }
  const std::vector<std::int64_t>& answered_at() const noexcept { return answered_at_; }

 private:
  std::uint64_t n_ = 0;
  Totals totals_{};
  std::vector<std::int64_t> answered_at_;
};

Go go(ActorRef to, std::uint32_t pings, std::uint32_t slow, std::chrono::nanoseconds slow_delay,
      std::chrono::nanoseconds timeout) {
  return Go{to.value(), pings, slow, slow_delay.count(), timeout.count()};
}

TEST(RequestInTestRuntime, RepliesArriveInRunAndTimeoutsExactlyAtTheirVirtualDeadline) {
  TestRuntime t;
  const ActorRef echo = t.spawn<Echo>();
  const ActorRef asker = t.spawn<Asker>();
  t.send(asker, go(echo, 3, 1, 1h, 100ms));
  t.run();
  EXPECT_EQ(t.reactor<Asker>(asker).totals().ok, 3u);
  EXPECT_EQ(t.reactor<Asker>(asker).totals().sum, 3u * 1000 + 1 + 2 + 3);
  EXPECT_EQ(t.reactor<Asker>(asker).requests_pending(), 1u);
  t.advance(100ms - 1ns);
  EXPECT_EQ(t.reactor<Asker>(asker).totals().timeouts, 0u);
  t.advance(1ns);
  EXPECT_EQ(t.reactor<Asker>(asker).totals().timeouts, 1u);
  EXPECT_EQ(t.reactor<Asker>(asker).requests_pending(), 0u);
  // The replier's late answer, an hour later, is dropped: no second outcome.
  t.advance(2h);
  EXPECT_EQ(t.reactor<Asker>(asker).answered_at().size(), 4u);
}

TEST(RequestInTestRuntime, AReplyDueAtTheTimeoutsInstantHasTheSameOutcomeInEveryRun) {
  std::vector<Totals> runs;
  for (int run = 0; run < 3; ++run) {
    TestRuntime t;
    const ActorRef echo = t.spawn<Echo>();
    const ActorRef asker = t.spawn<Asker>();
    t.send(asker, go(echo, 0, 1, 50ms, 50ms));
    t.run();
    t.advance(1s);
    const Totals totals = t.reactor<Asker>(asker).totals();
    EXPECT_EQ(totals.ok + totals.timeouts, 1u);  // exactly one outcome
    runs.push_back(totals);
  }
  for (const Totals& t : runs) {
    EXPECT_EQ(t.ok, runs[0].ok);
    EXPECT_EQ(t.timeouts, runs[0].timeouts);
  }
}

TEST(RequestReplay, ARecordedAskerReplaysItsRepliesAndTimeoutsWithoutTheReplier) {
  ::replay_test::TempDir dir;
  std::filesystem::path recording;
  Totals live{};
  {
    reheap::RuntimeConfig config;
    config.workers = 2;
    config.placement = reheap::Placement::kFixed;
    reheap::Runtime rt(config);
    reheap::SpawnOptions on1;
    on1.worker = 1;
    const ActorRef echo = rt.spawn<Echo>(on1);
    reheap::SpawnOptions options;
    options.worker = 0;
    options.recording = ::replay_test::file_recording(dir.path());
    const ActorRef asker = rt.spawn<Asker>(options);
    // Five answered at once, two answered long after the timeout. The timeout is real time: it
    // must leave the five immediate answers room on a slow machine (a sanitizer build, a loaded
    // CI host; 5 ms was not enough under ASan with other suites running).
    rt.send(asker, go(echo, 5, 2, 10s, 2s));
    const auto deadline = std::chrono::steady_clock::now() + 1min;
    for (;;) {
      const std::optional<Totals> t = rt.ask<Totals>(asker, Tally{0});
      ASSERT_TRUE(t.has_value());
      live = *t;
      if (live.ok + live.timeouts == 7 || std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(1ms);
    }
    ASSERT_EQ(live.ok, 5u);
    ASSERT_EQ(live.timeouts, 2u);
    recording = ::replay_test::recording_of(dir.path(), asker);
  }
  Replay replay = Replay::open(recording);
  EXPECT_EQ(replay.run(), replay.recorded_events());  // every output and state digest the same
  const Totals replayed = replay.reactor<Asker>().totals();
  EXPECT_EQ(replayed.ok, live.ok);
  EXPECT_EQ(replayed.timeouts, live.timeouts);
  EXPECT_EQ(replayed.sum, live.sum);
  EXPECT_EQ(replayed.ids, live.ids);
  EXPECT_EQ(replay.reactor<Asker>().requests_pending(), 0u);
}

}  // namespace
}  // namespace reheap::request_replay_test
