// Catching up (worker.h): a reactor that one event on its own worker fed a batch of messages or
// more handles its backlog right after that event's run, before the other reactors queued on the
// worker, and the scheduling promises hold around it: per-sender order, a stop during the
// catch-up, and a chatty pair that never reaches a batch.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>

#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap {
namespace catch_up_test {

using rttest::Probe;

// Well above a batch (RuntimeConfig::batch, 256), so that the producer's run qualifies.
constexpr std::uint32_t kBurst = 1000;

struct Item {
  std::uint32_t seq;
};

// What the consumer has handled, in the test's memory; only the worker thread writes it.
struct Counts {
  std::atomic<std::uint32_t> handled{0};
  std::atomic<std::uint32_t> out_of_order{0};
};

// Counts items and checks their order; stops itself after `stop_after` (0: never).
class Consumer : public Reactor {
 public:
  Consumer(Counts* counts, std::uint32_t stop_after) : counts_(counts), stop_after_(stop_after) {
    handle<&Consumer::on_item>();
  }
  void on_item(const Item& item) {
    if (item.seq != next_) counts_->out_of_order.fetch_add(1);
    next_ = item.seq + 1;
    const std::uint32_t handled = counts_->handled.fetch_add(1) + 1;
    if (handled == stop_after_) stop();
  }

 private:
  Counts* counts_;
  std::uint32_t stop_after_;
  std::uint32_t next_ = 0;
};

// Sends kBurst items to `to` from its start hook, in one event, and stops.
class Producer : public Reactor {
 public:
  explicit Producer(ActorRef to) : to_(to) {}
  void on_start() override {
    for (std::uint32_t seq = 0; seq < kBurst; ++seq) send(to_, Item{seq});
    stop();
  }

 private:
  ActorRef to_;
};

// Reports, from its start hook, how many items the consumer had handled by then.
class Witness : public Reactor {
 public:
  Witness(const Counts* counts, Probe* probe) : counts_(counts), probe_(probe) {}
  void on_start() override {
    probe_->done(counts_->handled.load());
    stop();
  }

 private:
  const Counts* counts_;
  Probe* probe_;
};

SpawnOptions on_worker_0() {
  SpawnOptions options;
  options.worker = 0;
  return options;
}

// Spawns, from one hook, the consumer, the producer and the witness on its own worker: all three
// join the worker's ready list in that order, in the same pass.
class Starter : public Reactor {
 public:
  Starter(Counts* counts, Probe* witness, std::uint32_t stop_after, Probe* consumer)
      : counts_(counts), witness_(witness), stop_after_(stop_after), consumer_(consumer) {}
  void on_start() override {
    const ActorRef consumer = spawn<Consumer>(on_worker_0(), counts_, stop_after_);
    spawn<Producer>(on_worker_0(), consumer);
    spawn<Witness>(on_worker_0(), counts_, witness_);
    consumer_->done(consumer.value());
    stop();
  }

 private:
  Counts* counts_;
  Probe* witness_;
  std::uint32_t stop_after_;
  Probe* consumer_;
};

TEST(CatchUp, AConsumerFedABatchHandlesItBeforeTheNextReactorInTheQueueRuns) {
  Counts counts;
  Probe witness;
  Probe consumer;
  Runtime rt(RuntimeConfig{.workers = 2});
  rt.spawn<Starter>(on_worker_0(), &counts, &witness, 0u, &consumer);
  ASSERT_TRUE(witness.wait_for(1));
  // In queue order alone the witness would run before the consumer and see nothing.
  EXPECT_EQ(witness.value(), kBurst);
  EXPECT_EQ(counts.out_of_order.load(), 0u);
  ASSERT_TRUE(consumer.wait_for(1));
  rt.stop(ActorRef(consumer.value()));
  EXPECT_TRUE(rt.wait_stopped(ActorRef(consumer.value()), rttest::kPatience));
}

TEST(CatchUp, AConsumerThatStopsWhileCatchingUpIsTornDownAndDropsTheRest) {
  constexpr std::uint32_t kStopAfter = 10;
  Counts counts;
  Probe witness;
  Probe consumer;
  Runtime rt(RuntimeConfig{.workers = 2});
  const std::uint64_t dead_before = rt.stats().dead_letters;
  rt.spawn<Starter>(on_worker_0(), &counts, &witness, kStopAfter, &consumer);
  ASSERT_TRUE(consumer.wait_for(1));
  // The stop takes effect after the tenth item's hook; the consumer's queued run tears it down.
  ASSERT_TRUE(rt.wait_stopped(ActorRef(consumer.value()), rttest::kPatience));
  ASSERT_TRUE(witness.wait_for(1));
  EXPECT_EQ(witness.value(), kStopAfter);
  EXPECT_EQ(counts.handled.load(), kStopAfter);
  EXPECT_EQ(rt.stats().dead_letters - dead_before, kBurst - kStopAfter);
}

}  // namespace catch_up_test
}  // namespace reheap
