// Bounded mailboxes: kReject refuses exactly the sends that find `capacity` messages waiting and
// counts them; kDropOldest lets the receiver see only the newest `capacity` messages and counts
// the rest as dropped. The receiver is held at a gate inside a handler so that messages pile up
// deterministically.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap::mailbox_test {
namespace {

using rttest::Gate;
using rttest::Log;
using rttest::Probe;

struct Item {
  std::uint32_t seq;
};
struct Hold {
  std::uint32_t unused;
};

// Logs the items it handles; Hold blocks it at the gate.
class Sink : public Reactor {
 public:
  Sink(Log<std::uint32_t>* log, Gate* gate) : log_(log), gate_(gate) {
    handle<&Sink::on_item>();
    handle<&Sink::on_hold>();
  }
  void on_item(const Item& i) { log_->add(i.seq); }
  void on_hold(const Hold&) { gate_->pass(); }

 private:
  Log<std::uint32_t>* log_;
  Gate* gate_;
};

// Sends `count` items to `to` when told, and reports how many sends found the mailbox full.
struct Fire {
  ActorRef to;
  std::uint32_t first;
  std::uint32_t count;
};
class Shooter : public Reactor {
 public:
  explicit Shooter(Probe* full) : full_(full) { handle<&Shooter::on_fire>(); }
  void on_fire(const Fire& f) {
    std::uint64_t full = 0;
    for (std::uint32_t i = 0; i < f.count; ++i) {
      if (send(f.to, Item{f.first + i}) == SendResult::kMailboxFull) ++full;
    }
    full_->done(full);
  }

 private:
  Probe* full_;
};

constexpr std::uint32_t kCapacity = 8;

SpawnOptions bounded(OverflowPolicy overflow) {
  SpawnOptions o;
  o.worker = 0;
  o.mailbox.capacity = kCapacity;
  o.mailbox.overflow = overflow;
  return o;
}

TEST(Mailbox, KRejectRefusesExactlyTheSendsThatFindCapacityMessagesWaiting) {
  Log<std::uint32_t> log;
  Gate gate;
  Probe full;
  Runtime rt(RuntimeConfig{.workers = 2});
  const ActorRef sink = rt.spawn<Sink>(bounded(OverflowPolicy::kReject), &log, &gate);
  SpawnOptions on1;
  on1.worker = 1;
  const ActorRef shooter = rt.spawn<Shooter>(on1, &full);
  ASSERT_EQ(rt.send(sink, Hold{}), SendResult::kOk);
  ASSERT_TRUE(gate.wait_entered());  // Hold was taken off the mailbox: it is empty now
  for (std::uint32_t i = 0; i < kCapacity; ++i) {
    ASSERT_EQ(rt.send(sink, Item{i}), SendResult::kOk) << "send " << i << " of " << kCapacity;
  }
  EXPECT_EQ(rt.send(sink, Item{100}), SendResult::kMailboxFull);
  EXPECT_EQ(rt.send(sink, Item{101}), SendResult::kMailboxFull);
  // A reactor's sends are refused alike.
  ASSERT_EQ(rt.send(shooter, Fire{sink, 200, 3}), SendResult::kOk);
  ASSERT_TRUE(full.wait_for(1));
  EXPECT_EQ(full.value(), 3u);
  gate.open();
  ASSERT_TRUE(log.wait_size(kCapacity));
  ASSERT_TRUE(rt.wait_idle());
  std::vector<std::uint32_t> expected;
  for (std::uint32_t i = 0; i < kCapacity; ++i) expected.push_back(i);
  EXPECT_EQ(log.items(), expected) << "a refused message was delivered, or an accepted one lost";
  const ReactorStats stats = rt.stats(sink);
  EXPECT_EQ(stats.rejected, 5u);
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_EQ(stats.queue_high_water, kCapacity);
  EXPECT_EQ(rt.stats(shooter).messages_out, 0u) << "refused sends are not messages out";
  // Room again once the receiver caught up.
  EXPECT_EQ(rt.send(sink, Item{300}), SendResult::kOk);
  ASSERT_TRUE(log.wait_size(kCapacity + 1));
}

TEST(Mailbox, KDropOldestDeliversTheNewestCapacityMessagesAndCountsTheDropped) {
  Log<std::uint32_t> log;
  Gate gate;
  Runtime rt(RuntimeConfig{.workers = 2});
  const ActorRef sink = rt.spawn<Sink>(bounded(OverflowPolicy::kDropOldest), &log, &gate);
  ASSERT_EQ(rt.send(sink, Hold{}), SendResult::kOk);
  ASSERT_TRUE(gate.wait_entered());
  constexpr std::uint32_t kSent = 50;
  for (std::uint32_t i = 0; i < kSent; ++i) ASSERT_EQ(rt.send(sink, Item{i}), SendResult::kOk);
  gate.open();
  ASSERT_TRUE(log.wait_size(kCapacity));
  ASSERT_TRUE(rt.wait_idle());
  std::vector<std::uint32_t> expected;
  for (std::uint32_t i = kSent - kCapacity; i < kSent; ++i) expected.push_back(i);
  EXPECT_EQ(log.items(), expected) << "not the newest " << kCapacity << " messages, in order";
  const ReactorStats stats = rt.stats(sink);
  EXPECT_EQ(stats.dropped, kSent - kCapacity);
  EXPECT_EQ(stats.rejected, 0u);
  EXPECT_EQ(stats.messages_in, kCapacity + 1);  // the Hold and the survivors
}

TEST(Mailbox, KDropOldestNeverDropsAStopRequest) {
  Log<std::uint32_t> log;
  Gate gate;
  Runtime rt(RuntimeConfig{.workers = 1});
  const ActorRef sink = rt.spawn<Sink>(bounded(OverflowPolicy::kDropOldest), &log, &gate);
  ASSERT_EQ(rt.send(sink, Hold{}), SendResult::kOk);
  ASSERT_TRUE(gate.wait_entered());
  ASSERT_TRUE(rt.stop(sink));  // the oldest waiting message
  for (std::uint32_t i = 0; i < 3 * kCapacity; ++i) {
    ASSERT_EQ(rt.send(sink, Item{i}), SendResult::kOk);
  }
  gate.open();
  ASSERT_TRUE(rt.wait_stopped(sink)) << "the stop request was shed with the oldest messages";
  EXPECT_TRUE(log.items().empty()) << "messages behind a stop are not handled";
}

// Stop with messages queued: a reactor's chained sends that land behind a stop request are dead
// letters, every one of them counted, and none is handled.
TEST(Mailbox, MessagesQueuedBehindAStopAreCountedAsDeadLettersAndNotHandled) {
  Log<std::uint32_t> log;
  Gate gate;
  Probe full;
  Runtime rt(RuntimeConfig{.workers = 2});
  SpawnOptions on0;
  on0.worker = 0;
  SpawnOptions on1;
  on1.worker = 1;
  const ActorRef sink = rt.spawn<Sink>(on0, &log, &gate);
  const ActorRef shooter = rt.spawn<Shooter>(on1, &full);
  ASSERT_EQ(rt.send(sink, Hold{}), SendResult::kOk);
  ASSERT_TRUE(gate.wait_entered());
  const std::uint64_t before = rt.stats().dead_letters;
  ASSERT_TRUE(rt.stop(sink));
  constexpr std::uint32_t kQueued = 1'000;
  ASSERT_EQ(rt.send(shooter, Fire{sink, 0, kQueued}), SendResult::kOk);
  // A reactor's sends are pushed when its event ends (outbox.h), after the probe of that event:
  // the probe of the shooter's next event says they all are in the sink's mailbox.
  ASSERT_EQ(rt.send(shooter, Fire{sink, 0, 0}), SendResult::kOk);
  ASSERT_TRUE(full.wait_for(2));
  EXPECT_EQ(full.value(), 0u);
  gate.open();
  ASSERT_TRUE(rt.wait_stopped(sink));
  ASSERT_TRUE(rt.wait_idle());
  EXPECT_EQ(rt.stats().dead_letters - before, kQueued);
  EXPECT_TRUE(log.items().empty()) << "a message behind the stop was handled";
}

TEST(Mailbox, AnUnboundedMailboxTakesEverything) {
  Log<std::uint32_t> log;
  Gate gate;
  Runtime rt(RuntimeConfig{.workers = 1});
  const ActorRef sink = rt.spawn<Sink>(&log, &gate);
  ASSERT_EQ(rt.send(sink, Hold{}), SendResult::kOk);
  ASSERT_TRUE(gate.wait_entered());
  for (std::uint32_t i = 0; i < 10'000; ++i) ASSERT_EQ(rt.send(sink, Item{i}), SendResult::kOk);
  gate.open();
  ASSERT_TRUE(log.wait_size(10'000));
  const ReactorStats stats = rt.stats(sink);
  EXPECT_EQ(stats.dropped + stats.rejected, 0u);
  EXPECT_EQ(stats.queue_high_water, 10'000u);
}

}  // namespace
}  // namespace reheap::mailbox_test
