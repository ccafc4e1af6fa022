// TestRuntime: what a test can rely on about order, time and randomness. Each test states a
// promise of reheap/testing/test_runtime.h and checks it on reactors written as for the runtime.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "reheap/testing/test_runtime.h"

namespace test_runtime_order_test {
namespace {

using namespace std::chrono_literals;
using reheap::ActorRef;
using reheap::Reactor;
using reheap::testing::message;
using reheap::testing::MessageOrder;
using reheap::testing::TestRuntime;
using reheap::testing::TestRuntimeConfig;
using reheap::testing::VirtualClock;

struct Ping {
  int n;
  bool operator==(const Ping&) const = default;
};
struct Pong {
  int n;
  bool operator==(const Pong&) const = default;
};

class Ponger : public Reactor {
 public:
  Ponger() { handle<&Ponger::on_ping>(); }
  void on_ping(const Ping& p) { send(sender(), Pong{p.n}); }
};

class Pinger : public Reactor {
 public:
  Pinger(ActorRef peer, int rounds) : peer_(peer), rounds_(rounds) { handle<&Pinger::on_pong>(); }
  void on_start() override { send(peer_, Ping{0}); }
  void on_pong(const Pong& p) {
    log.push_back(p.n);
    if (p.n + 1 < rounds_) send(sender(), Ping{p.n + 1});
  }
  std::vector<int> log;

 private:
  ActorRef peer_;
  int rounds_;
};

TEST(TestRuntime, PingPongRunsToCompletionOnTheTestThread) {
  TestRuntime rt;
  const ActorRef ponger = rt.spawn<Ponger>();
  const ActorRef pinger = rt.spawn<Pinger>(ponger, 5);
  EXPECT_EQ(rt.pending(), 2u);  // two starts, nothing delivered before the test runs
  // The first round, hop by hop (the starts run first), then the four others.
  EXPECT_TRUE(rt.expect(message<Ping>().from(pinger).to(ponger).with(Ping{0})));
  EXPECT_TRUE(rt.expect(message<Pong>().from(ponger).to(pinger).with(Pong{0})));
  EXPECT_EQ(rt.run(), 8u);  // 4 pings, 4 pongs
  EXPECT_EQ(rt.pending(), 0u);
  EXPECT_EQ(rt.reactor<Pinger>(pinger).log, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(rt.reactor<Ponger>(ponger).events_delivered(), 6u);
  EXPECT_EQ(rt.events_delivered(), 12u);
  EXPECT_EQ(ponger.slot(), 1u);  // references are minted in spawn order
  EXPECT_EQ(pinger.slot(), 2u);
}

TEST(TestRuntime, StepDeliversOneEventStartsFirst) {
  TestRuntime rt;
  const ActorRef ponger = rt.spawn<Ponger>();
  EXPECT_EQ(rt.send(ponger, Ping{1}), reheap::SendResult::kOk);
  EXPECT_TRUE(rt.step());  // on_start, although the message was queued first
  EXPECT_EQ(rt.reactor<Ponger>(ponger).events_delivered(), 1u);
  EXPECT_TRUE(rt.step());  // the ping; the pong to the test's null sender is a dead letter
  EXPECT_FALSE(rt.step());
  EXPECT_TRUE(rt.run_until([&] { return true; }));
}

// ---- per-sender FIFO and the seeded shuffle ----

struct Item {
  int sender;
  int seq;
};

class Collector : public Reactor {
 public:
  Collector() { handle<&Collector::on_item>(); }
  void on_item(const Item& i) { log.emplace_back(i.sender, i.seq); }
  std::vector<std::pair<int, int>> log;
};

class Burst : public Reactor {
 public:
  Burst(ActorRef to, int id, int count) : to_(to), id_(id), count_(count) {}
  void on_start() override {
    for (int i = 0; i < count_; ++i) send(to_, Item{id_, i});
  }

 private:
  ActorRef to_;
  int id_;
  int count_;
};

std::vector<std::pair<int, int>> interleaving(TestRuntimeConfig config) {
  TestRuntime rt(config);
  const ActorRef collector = rt.spawn<Collector>();
  for (int id = 0; id < 3; ++id) rt.spawn<Burst>(collector, id, 20);
  rt.run();
  return rt.reactor<Collector>(collector).log;
}

void expect_fifo_per_sender(const std::vector<std::pair<int, int>>& log) {
  ASSERT_EQ(log.size(), 60u);
  int next[3] = {0, 0, 0};
  for (const auto& [sender, seq] : log) EXPECT_EQ(seq, next[sender]++) << "sender " << sender;
}

TEST(TestRuntime, FifoOrderIsGlobalSendOrder) {
  const auto log = interleaving({});
  expect_fifo_per_sender(log);
  for (std::size_t i = 0; i < log.size(); ++i) EXPECT_EQ(log[i].first, static_cast<int>(i / 20));
}

TEST(TestRuntime, ShuffleKeepsPerSenderFifoAndRepeatsPerSeed) {
  const auto a = interleaving({.seed = 1, .order = MessageOrder::kShuffle});
  const auto a_again = interleaving({.seed = 1, .order = MessageOrder::kShuffle});
  const auto b = interleaving({.seed = 2, .order = MessageOrder::kShuffle});
  expect_fifo_per_sender(a);
  expect_fifo_per_sender(b);
  EXPECT_EQ(a, a_again);  // same seed, same interleaving, element for element
  EXPECT_NE(a, b);
  EXPECT_NE(a, interleaving({}));  // and it does interleave
}

// ---- virtual time ----

class Clockwork : public Reactor {
 public:
  void on_start() override {
    a = start_timer(30ms);
    b = start_timer(20ms, 20ms);
    const reheap::TimerId c = start_timer(10ms);
    cancel_timer(c);
    e = start_timer(40ms);  // due with b's second firing: the lower id goes first
  }
  void on_timer(reheap::TimerId id) override {
    fired.emplace_back(id, std::chrono::duration_cast<std::chrono::milliseconds>(steady_now() - VirtualClock::kSteadyEpoch).count());
    if (id == b && ++b_count == 3) cancel_timer(b);
  }
  reheap::TimerId a = 0, b = 0, e = 0;
  int b_count = 0;
  std::vector<std::pair<reheap::TimerId, long>> fired;
};

TEST(TestRuntime, TimersFireAtTheirVirtualTimesInOrder) {
  TestRuntime rt;
  const ActorRef r = rt.spawn<Clockwork>();
  rt.run();
  EXPECT_EQ(rt.steady_now(), VirtualClock::kSteadyEpoch);  // run() never moves the clock
  EXPECT_EQ(rt.next_timer(), VirtualClock::kSteadyEpoch + 20ms);
  EXPECT_EQ(rt.advance(19ms), 0u);
  EXPECT_TRUE(rt.reactor<Clockwork>(r).fired.empty());
  EXPECT_EQ(rt.advance(81ms), 5u);
  const Clockwork& c = rt.reactor<Clockwork>(r);
  using Fired = std::vector<std::pair<reheap::TimerId, long>>;
  EXPECT_EQ(c.fired, (Fired{{c.b, 20}, {c.a, 30}, {c.b, 40}, {c.e, 40}, {c.b, 60}}));
  EXPECT_EQ(rt.now(), VirtualClock::kSystemEpoch + 100ms);
  EXPECT_FALSE(rt.next_timer().has_value());  // the periodic one cancelled itself
}

struct WhatTime {};

class TimeReader : public Reactor {
 public:
  TimeReader() { handle<&TimeReader::on_ask>(); }
  void on_ask(const WhatTime&) {
    const auto first = now();
    send(self(), Ping{0});  // anything between two reads
    stable = stable && first == now() && steady_now() == steady_now();
    seen.push_back(first);
  }
  bool stable = true;
  std::vector<std::chrono::system_clock::time_point> seen;
};

TEST(TestRuntime, NowIsTheVirtualTimeFixedDuringAnEvent) {
  TestRuntime rt;
  const ActorRef r = rt.spawn<TimeReader>();
  rt.send(r, WhatTime{});
  rt.run();
  rt.advance(5s);
  rt.send(r, WhatTime{});
  rt.run();
  const TimeReader& t = rt.reactor<TimeReader>(r);
  EXPECT_TRUE(t.stable);
  using Times = std::vector<std::chrono::system_clock::time_point>;
  EXPECT_EQ(t.seen, (Times{VirtualClock::kSystemEpoch, VirtualClock::kSystemEpoch + 5s}));
}

// ---- random ----

class Dice : public Reactor {
 public:
  void on_start() override {
    for (int i = 0; i < 4; ++i) rolls.push_back(random());
  }
  std::vector<std::uint64_t> rolls;
};

std::vector<std::uint64_t> rolls(std::uint64_t seed, MessageOrder order = MessageOrder::kFifo) {
  TestRuntime rt({.seed = seed, .order = order});
  const ActorRef first = rt.spawn<Dice>();
  const ActorRef second = rt.spawn<Dice>();
  rt.run();
  std::vector<std::uint64_t> all = rt.reactor<Dice>(first).rolls;
  const auto& more = rt.reactor<Dice>(second).rolls;
  all.insert(all.end(), more.begin(), more.end());
  return all;
}

TEST(TestRuntime, RandomRepeatsWithTheSeedAndDiffersWithAnother) {
  const auto a = rolls(7);
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(a, rolls(7));
  EXPECT_EQ(a, rolls(7, MessageOrder::kShuffle));  // the shuffle draws from its own stream
  EXPECT_NE(a, rolls(8));
  // Two reactors of one runtime get different sequences.
  EXPECT_NE(std::vector<std::uint64_t>(a.begin(), a.begin() + 4), std::vector<std::uint64_t>(a.begin() + 4, a.end()));
}

// ---- Reactor::spawn ----

struct Hello {
  int index;
  bool operator==(const Hello&) const = default;
};

class Child : public Reactor {
 public:
  Child(ActorRef parent, int i) : index(i), parent_(parent) {}
  void on_start() override { send(parent_, Hello{index}); }
  int index;

 private:
  ActorRef parent_;
};

class Parent : public Reactor {
 public:
  Parent() { handle<&Parent::on_hello>(); }
  void on_start() override {
    for (int i = 0; i < 3; ++i) children.push_back(spawn<Child>(self(), i));
  }
  void on_hello(const Hello& h) {
    hellos.push_back(h.index);
    senders.push_back(sender());
  }
  std::vector<ActorRef> children;
  std::vector<int> hellos;
  std::vector<ActorRef> senders;
};

TEST(TestRuntime, ReactorsSpawnChildrenOnTheSameRuntime) {
  TestRuntime rt;
  const ActorRef parent = rt.spawn<Parent>();
  EXPECT_TRUE(rt.step());  // the parent's start spawns the children
  const Parent& p = rt.reactor<Parent>(parent);
  ASSERT_EQ(p.children.size(), 3u);
  // Each child, started at once, greets its parent with its index.
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(rt.expect(message<Hello>().from(p.children[i]).to(parent).with(Hello{i})));
  EXPECT_EQ(rt.pending(), 0u);
  EXPECT_EQ(rt.events_delivered(), 7u);  // the parent's start, 3 starts, 3 hellos
  EXPECT_EQ(p.senders, p.children);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(rt.alive(p.children[i]));
    EXPECT_EQ(rt.reactor<Child>(p.children[i]).index, i);
    EXPECT_NE(&rt.heap(p.children[i]), &rt.heap(parent));  // each in its own heap
  }
}

}  // namespace
}  // namespace test_runtime_order_test
