// Shutdown: with messages in flight the destructor returns within the drain timeout, every
// reactor that started gets on_stop (and its sends there are refused), a finite exchange is
// drained before the stops, and afterwards the runtime refuses sends, spawns and restores.
// Leaks of anything left in flight show up under ASan's leak check. An idle runtime, listeners
// open, shuts down in milliseconds.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap::shutdown_test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using rttest::Probe;

struct Counts {
  std::atomic<std::uint64_t> started{0};
  std::atomic<std::uint64_t> stopped{0};
  std::atomic<std::uint64_t> refused_in_on_stop{0};  // kShuttingDown
  std::atomic<std::uint64_t> handled{0};
};

struct Token {
  std::uint64_t hops;
  std::uint64_t payload[4];
};
struct NextIs {
  ActorRef next;
};

// A member of a ring: forwards every token to the next member, forever.
class RingMember : public Reactor {
 public:
  explicit RingMember(Counts* counts) : counts_(counts) {
    handle<&RingMember::on_token>();
    handle<&RingMember::on_next>();
  }
  void on_start() override { counts_->started.fetch_add(1); }
  void on_next(const NextIs& n) { next_ = n.next; }
  void on_token(const Token& t) {
    counts_->handled.fetch_add(1, std::memory_order_relaxed);
    kept_.push_back(t.hops);
    if (kept_.size() > 64) kept_.erase(kept_.begin());
    send(next_, Token{t.hops + 1, {1, 2, 3, 4}});
  }
  void on_stop() override {
    if (send(next_, Token{0, {}}) == SendResult::kShuttingDown) {
      counts_->refused_in_on_stop.fetch_add(1);
    }
    counts_->stopped.fetch_add(1);
  }

 private:
  Counts* counts_;
  ActorRef next_;
  std::vector<std::uint64_t> kept_;
};

std::vector<ActorRef> spawn_ring(Runtime& rt, Counts& counts, std::size_t members) {
  std::vector<ActorRef> ring;
  for (std::size_t i = 0; i < members; ++i) ring.push_back(rt.spawn<RingMember>(&counts));
  for (std::size_t i = 0; i < members; ++i) {
    EXPECT_EQ(rt.send(ring[i], NextIs{ring[(i + 1) % members]}), SendResult::kOk);
  }
  return ring;
}

// Listens on port 0 and does nothing else, like a server with no connection open.
class IdleListener : public Reactor {
 public:
  explicit IdleListener(Probe* port) : port_(port) {}
  void on_start() override { port_->done(local_port(listen("127.0.0.1", 0, true))); }

 private:
  Probe* port_;
};

// Nothing is in flight and nothing runs: shutdown has only to close the listeners, stop the
// reactors and join the workers, which takes milliseconds, and waits for no timeout: with a drain
// timeout of a minute, it returns well before half of it however loaded the machine is. (A bound
// in milliseconds would measure the scheduler: under a sanitizer on a busy machine, a thread may
// wait that long for a core.)
TEST(Shutdown, AnIdleRuntimeWithListenersShutsDownWithoutWaitingForTheDrainTimeout) {
  constexpr std::chrono::seconds kDrain{60};
  for (int workers : {1, 2}) {
    Runtime rt(RuntimeConfig{.workers = workers, .drain_timeout = kDrain});
    std::vector<std::unique_ptr<Probe>> ports;
    for (int w = 0; w < workers; ++w) {
      ports.push_back(std::make_unique<Probe>());
      SpawnOptions options;
      options.worker = w;
      rt.spawn<IdleListener>(options, ports.back().get());
    }
    for (auto& port : ports) ASSERT_TRUE(port->wait_for(1));
    ASSERT_TRUE(rt.wait_idle());  // nothing to run: the workers go to sleep in their loops
    const auto start = Clock::now();
    rt.shutdown();
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    EXPECT_LT(took, kDrain / 2) << workers << " workers: the shutdown waited for the drain timeout";
    std::printf("%d workers: shut down in %lld ms\n", workers, static_cast<long long>(took.count()));
  }
}

TEST(Shutdown, TheDestructorReturnsWithinTheDrainTimeoutWhileReactorsKeepMessagingAndAllGetOnStop) {
  Counts counts;
  constexpr std::size_t kMembers = 64;
  std::optional<Runtime> rt;
  rt.emplace(RuntimeConfig{.workers = 2, .drain_timeout = 100ms});
  const std::vector<ActorRef> ring = spawn_ring(*rt, counts, kMembers);
  for (std::size_t i = 0; i < 200; ++i) {
    ASSERT_EQ(rt->send(ring[i % kMembers], Token{0, {}}), SendResult::kOk);
  }
  ASSERT_TRUE(rttest::wait_until([&] { return counts.handled.load() > 10'000; }));
  // ~Runtime: the ring never goes idle, so the drain times out and the reactors are stopped with
  // tokens in flight.
  const auto start = Clock::now();
  rt.reset();
  const Clock::duration took = Clock::now() - start;
  EXPECT_LT(took, 100ms + 5s) << "the shutdown did not respect the drain timeout";
  EXPECT_GE(took, 100ms) << "the shutdown did not wait for the drain";
  EXPECT_EQ(counts.started.load(), kMembers);
  EXPECT_EQ(counts.stopped.load(), kMembers) << "on_stop was not called for every reactor";
  EXPECT_EQ(counts.refused_in_on_stop.load(), kMembers)
      << "a send in on_stop during shutdown must say kShuttingDown";
}

// Bounces a counter with its peer until it reaches `until`, then reports.
struct Ball {
  std::uint64_t n;
};
struct Serve {
  ActorRef peer;
};
class Player : public Reactor {
 public:
  Player(std::uint64_t until, Probe* done) : until_(until), done_(done) {
    handle<&Player::on_ball>();
    handle<&Player::on_serve>();
  }
  void on_message(const Message& m) override {
    sender_ = m.sender();
    Reactor::on_message(m);
  }
  void on_serve(const Serve& s) { send(s.peer, Ball{0}); }
  void on_ball(const Ball& b) {
    if (b.n + 1 >= until_) {
      done_->done(b.n + 1);
      return;
    }
    send(sender_, Ball{b.n + 1});
  }

 private:
  std::uint64_t until_;
  Probe* done_;
  ActorRef sender_;
};

TEST(Shutdown, MessagesInFlightAreHandledBeforeTheReactorsStopWhenTheDrainHasTime) {
  Probe done;
  constexpr std::uint64_t kRounds = rttest::kSanitized ? 5'000 : 20'000;
  {
    Runtime rt(RuntimeConfig{.workers = 2, .drain_timeout = 30s});
    SpawnOptions on0;
    on0.worker = 0;
    SpawnOptions on1;
    on1.worker = 1;
    const ActorRef a = rt.spawn<Player>(on0, kRounds, &done);
    const ActorRef b = rt.spawn<Player>(on1, kRounds, &done);
    ASSERT_EQ(rt.send(a, Serve{b}), SendResult::kOk);
  }
  EXPECT_EQ(done.calls(), 1u) << "the exchange was cut short by the shutdown";
  EXPECT_EQ(done.value(), kRounds);
}

TEST(Shutdown, ReactorsSpawnedJustBeforeTheShutdownStartAndStopToo) {
  Counts counts;
  constexpr std::size_t kReactors = 1000;
  {
    Runtime rt(RuntimeConfig{.workers = 2});
    for (std::size_t i = 0; i < kReactors; ++i) rt.spawn<RingMember>(&counts);
  }
  EXPECT_EQ(counts.started.load(), kReactors);
  EXPECT_EQ(counts.stopped.load(), kReactors);
}

TEST(Shutdown, AfterShutdownSendsSpawnsAndRestoresAreRefused) {
  Counts counts;
  Runtime rt(RuntimeConfig{.workers = 2, .drain_timeout = 50ms});
  const std::vector<ActorRef> ring = spawn_ring(rt, counts, 8);
  for (const ActorRef r : ring) ASSERT_EQ(rt.send(r, Token{0, {}}), SendResult::kOk);
  rt.shutdown();
  EXPECT_EQ(counts.stopped.load(), 8u);
  EXPECT_EQ(rt.send(ring[0], Token{0, {}}), SendResult::kShuttingDown);
  EXPECT_EQ(rt.send(ActorRef{}, Token{0, {}}), SendResult::kShuttingDown);
  EXPECT_THROW(rt.spawn<RingMember>(&counts), std::runtime_error);
  EXPECT_THROW(rt.restore("/nonexistent.snap"), std::runtime_error);
  EXPECT_FALSE(rt.alive(ring[0]));
  EXPECT_FALSE(rt.stop(ring[0]));
  const RuntimeStats s = rt.stats();
  EXPECT_EQ(s.reactors, 0u);
  EXPECT_EQ(s.messages_in_flight, 0u) << "messages freed at shutdown must count as dropped";
  rt.shutdown();  // twice: a no-op
}

}  // namespace
}  // namespace reheap::shutdown_test
