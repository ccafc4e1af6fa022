// Statistics: per reactor (messages in and out, queue length and its high water, heap bytes,
// handler time, events, unhandled messages) and for the runtime (reactors, messages in flight,
// dead letters, failures).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap::stats_test {
namespace {

using rttest::Gate;
using rttest::Probe;

struct Ping {
  std::uint32_t n;
};
struct Pong {
  std::uint32_t n;
};
struct Hold {
  bool then_stop;
};
struct Unknown {
  int x;
};

// Answers every Ping with a Pong to its sender, keeping a string per ping in its heap. Hold
// blocks it at the gate (and stops it afterwards if asked).
class Echo : public Reactor {
 public:
  explicit Echo(Gate* gate) : gate_(gate) {
    handle<&Echo::on_ping>();
    handle<&Echo::on_hold>();
  }
  void on_message(const Message& m) override {
    sender_ = m.sender();
    Reactor::on_message(m);
  }
  void on_ping(const Ping& p) {
    kept_.push_back(std::string(200, static_cast<char>('a' + p.n % 26)));
    if (sender_) send(sender_, Pong{p.n});
  }
  void on_hold(const Hold& h) {
    gate_->pass();
    if (h.then_stop) stop();
  }

 private:
  Gate* gate_;
  ActorRef sender_;
  std::vector<std::string> kept_;
};

// Sends `count` pings at start and reports when every pong came back.
class Client : public Reactor {
 public:
  Client(ActorRef echo, std::uint32_t count, Probe* probe)
      : echo_(echo), count_(count), probe_(probe) {
    handle<&Client::on_pong>();
  }
  void on_start() override {
    for (std::uint32_t i = 0; i < count_; ++i) send(echo_, Ping{i});
  }
  void on_pong(const Pong&) {
    if (++pongs_ == count_) probe_->done(pongs_);
  }

 private:
  ActorRef echo_;
  std::uint32_t count_;
  Probe* probe_;
  std::uint32_t pongs_ = 0;
};

TEST(Stats, AReactorCountsItsMessagesEventsHandlerTimeAndHeap) {
  Gate gate;
  Probe probe;
  Runtime rt(RuntimeConfig{.workers = 2});
  SpawnOptions on1;
  on1.worker = 1;
  SpawnOptions on0;
  on0.worker = 0;
  const ActorRef echo = rt.spawn<Echo>(on1, &gate);
  const ActorRef client = rt.spawn<Client>(on0, echo, 500u, &probe);
  ASSERT_TRUE(probe.wait_for(1));
  ASSERT_EQ(rt.send(echo, Unknown{1}), SendResult::kOk);
  ASSERT_TRUE(rt.wait_idle());
  const ReactorStats e = rt.stats(echo);
  EXPECT_EQ(e.worker, 1);
  EXPECT_EQ(e.messages_in, 501u);
  EXPECT_EQ(e.messages_out, 500u);
  EXPECT_EQ(e.unhandled, 1u);
  EXPECT_EQ(e.decode_errors, 0u);
  EXPECT_GE(e.events, 502u);  // on_start and every message
  EXPECT_GT(e.handler_ns, 0u);
  EXPECT_GT(e.max_handler_ns, 0u);
  EXPECT_LE(e.max_handler_ns, e.handler_ns);
  EXPECT_GE(e.heap_live_bytes, 500u * 200u) << "the kept strings live in its heap";
  EXPECT_GE(e.heap_committed_bytes, e.heap_live_bytes);
  EXPECT_EQ(e.queue_length, 0u);
  EXPECT_GE(e.queue_high_water, 1u);
  EXPECT_EQ(e.restarts, 0u);
  EXPECT_EQ(e.rejected + e.dropped, 0u);
  const ReactorStats c = rt.stats(client);
  EXPECT_EQ(c.worker, 0);
  EXPECT_EQ(c.messages_in, 500u);
  EXPECT_EQ(c.messages_out, 500u);
  EXPECT_GT(c.heap_committed_bytes, 0u);
}

TEST(Stats, TheQueueHighWaterIsTheLongestTheMailboxHasBeen) {
  Gate gate;
  Runtime rt(RuntimeConfig{.workers = 1});
  const ActorRef echo = rt.spawn<Echo>(&gate);
  ASSERT_EQ(rt.send(echo, Hold{false}), SendResult::kOk);
  ASSERT_TRUE(gate.wait_entered());
  for (std::uint32_t i = 0; i < 20; ++i) ASSERT_EQ(rt.send(echo, Ping{i}), SendResult::kOk);
  gate.open();
  ASSERT_TRUE(rt.wait_idle());
  const ReactorStats s = rt.stats(echo);
  EXPECT_EQ(s.queue_high_water, 20u);
  EXPECT_EQ(s.queue_length, 0u);
  EXPECT_EQ(s.messages_in, 21u);
}

TEST(Stats, TheRuntimeCountsReactorsMessagesInFlightDeadLettersAndFailures) {
  Gate gate;
  Runtime rt(RuntimeConfig{.workers = 2});
  EXPECT_EQ(rt.stats().reactors, 0u);
  const ActorRef echo = rt.spawn<Echo>(&gate);
  const ActorRef other = rt.spawn<Echo>(&gate);
  EXPECT_EQ(rt.stats().reactors, 2u);
  ASSERT_TRUE(rt.wait_idle());
  EXPECT_EQ(rt.stats().messages_in_flight, 0u);
  ASSERT_EQ(rt.send(echo, Hold{true}), SendResult::kOk);
  ASSERT_TRUE(gate.wait_entered());
  for (std::uint32_t i = 0; i < 5; ++i) ASSERT_EQ(rt.send(echo, Ping{i}), SendResult::kOk);
  EXPECT_EQ(rt.stats().messages_in_flight, 6u);  // the Hold being handled and 5 waiting
  gate.open();  // the echo stops after Hold: the 5 pings are dead letters
  ASSERT_TRUE(rt.wait_stopped(echo));
  ASSERT_TRUE(rt.wait_idle());
  const RuntimeStats s = rt.stats();
  EXPECT_EQ(s.reactors, 1u);
  EXPECT_EQ(s.dead_letters, 5u);
  EXPECT_EQ(s.messages_in_flight, 0u);
  EXPECT_EQ(s.failures, 0u);
  EXPECT_TRUE(rt.alive(other));
}

TEST(Stats, StatsOfAReactorThatIsGoneThrow) {
  Gate gate;
  Runtime rt(RuntimeConfig{.workers = 1});
  const ActorRef echo = rt.spawn<Echo>(&gate);
  ASSERT_TRUE(rt.stop(echo));
  ASSERT_TRUE(rt.wait_stopped(echo));
  EXPECT_THROW(rt.stats(echo), std::runtime_error);
  EXPECT_THROW(rt.stats(ActorRef{}), std::runtime_error);
}

}  // namespace
}  // namespace reheap::stats_test
