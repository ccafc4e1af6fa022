// Per-sender FIFO across moves: messages from one sender to one receiver arrive in the order they
// were sent while the receiver, or the sender, moves between the workers as the stream flows.
// (The basic case, many senders on both workers and outside threads, is in messaging_test.cpp.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <thread>
#include <vector>

#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap {
namespace {

using rttest::Probe;

struct Tagged {
  std::uint32_t sender;
  std::uint32_t seq;
};

// Checks per-sender order; reports (out of order count) once `expected` messages arrived. Also
// counts the workers it handled them on, to show the moves happened mid-stream.
class OrderChecker : public Reactor {
 public:
  OrderChecker(Probe* probe, std::uint64_t expected) : probe_(probe), expected_(expected) {
    handle<&OrderChecker::on_tagged>();
  }
  void on_tagged(const Tagged& t) {
    auto& next = next_[t.sender];
    if (t.seq != next) ++out_of_order_;
    next = t.seq + 1;
    workers_seen_ |= 1u << worker();
    if (++received_ == expected_) probe_->done(out_of_order_ * 10 + workers_seen_);
  }

 private:
  Probe* probe_;
  std::uint64_t expected_;
  std::uint64_t received_ = 0;
  std::uint64_t out_of_order_ = 0;
  unsigned workers_seen_ = 0;
  std::map<std::uint32_t, std::uint32_t> next_;
};

// Streams `count` Tagged messages to `to`, a burst per turn: between bursts it sends itself a
// Continue, so a move can happen between any two bursts. Reports the workers it sent from. At
// half way it idles (still sending itself Continue) until `half_gate` opens, so that the test can
// make sure a move happened mid-stream however fast the machine is.
struct Continue {
  std::uint32_t unused;
};
class Streamer : public Reactor {
 public:
  Streamer(ActorRef to, std::uint32_t id, std::uint32_t count, std::atomic<unsigned>* workers,
           std::atomic<bool>* half_gate)
      : to_(to), id_(id), count_(count), workers_(workers), half_gate_(half_gate) {
    handle<&Streamer::on_continue>();
  }
  void on_start() override { send(self(), Continue{}); }
  void on_continue(const Continue&) {
    workers_->fetch_or(1u << worker());
    const bool held = seq_ >= count_ / 2 && !half_gate_->load();
    for (int i = 0; i < 50 && seq_ < count_ && !held; ++i) {
      if (send(to_, Tagged{id_, seq_}) == SendResult::kOk) ++seq_;
    }
    if (seq_ < count_) send(self(), Continue{});
  }

 private:
  ActorRef to_;
  std::uint32_t id_;
  std::uint32_t count_;
  std::atomic<unsigned>* workers_;
  std::atomic<bool>* half_gate_;
  std::uint32_t seq_ = 0;
};

constexpr std::uint32_t kEach = rttest::kSanitized ? 20'000 : 100'000;

TEST(Ordering, PerSenderFifoHoldsWhileTheReceiverMovesBetweenWorkersMidStream) {
  Probe probe;
  std::atomic<bool> half_gate{false};
  std::atomic<unsigned> sender_workers{0};
  Runtime rt(RuntimeConfig{.workers = 2});
  constexpr std::uint32_t kReactorSenders = 2;
  SpawnOptions on0;
  on0.worker = 0;
  const ActorRef receiver =
      rt.spawn<OrderChecker>(on0, &probe, std::uint64_t{kReactorSenders + 1} * kEach);
  for (std::uint32_t s = 0; s < kReactorSenders; ++s) {
    SpawnOptions o;
    o.worker = static_cast<int>(s % 2);
    rt.spawn<Streamer>(o, receiver, s, kEach, &sender_workers, &half_gate);
  }
  std::thread outside([&] {
    for (std::uint32_t i = 0; i < kEach; ++i) {
      if (i == kEach / 2) {
        while (!half_gate.load()) std::this_thread::yield();
      }
      ASSERT_EQ(rt.send(receiver, Tagged{kReactorSenders, i}), SendResult::kOk);
    }
  });
  // Moves until the receiver is done, bounded by time rather than by a count: on a loaded machine
  // 2000 quick moves could all pass before the second half of the stream arrived, leaving every
  // message to worker 0 (a flaky failure of the "both workers" check).
  int moves = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (probe.calls() == 0 && std::chrono::steady_clock::now() < give_up) {
    rt.move(receiver, ++moves % 2);
    if (moves == 3) half_gate = true;  // the receiver has been on worker 1 at least once
  }
  half_gate = true;
  outside.join();
  ASSERT_TRUE(probe.wait_for(1, std::chrono::seconds(60)));
  EXPECT_EQ(probe.value() / 10, 0u) << "messages from one sender arrived out of order";
  EXPECT_EQ(probe.value() % 10, 3u) << "the receiver did not handle messages on both workers";
  EXPECT_GT(moves, 1);
}

TEST(Ordering, PerSenderFifoHoldsWhileTheSendersMoveBetweenWorkersMidStream) {
  Probe probe;
  std::atomic<bool> half_gate{false};
  std::atomic<unsigned> sender_workers{0};
  Runtime rt(RuntimeConfig{.workers = 2});
  constexpr std::uint32_t kSenders = 3;
  const ActorRef receiver = rt.spawn<OrderChecker>(&probe, std::uint64_t{kSenders} * kEach);
  std::vector<ActorRef> senders;
  for (std::uint32_t s = 0; s < kSenders; ++s) {
    SpawnOptions o;
    o.worker = static_cast<int>(s % 2);
    senders.push_back(rt.spawn<Streamer>(o, receiver, s, kEach, &sender_workers, &half_gate));
  }
  int moves = 0;
  while (probe.calls() == 0 && moves < 3000) {
    const ActorRef s = senders[static_cast<std::size_t>(moves) % kSenders];
    ++moves;
    try {
      rt.move(s, (moves / static_cast<int>(kSenders)) % 2);
    } catch (const std::runtime_error&) {
      // That sender finished and stopped? Streamers never stop, so this must not happen.
      ADD_FAILURE() << "move of a live streamer failed";
      break;
    }
    if (moves == 2 * static_cast<int>(kSenders)) half_gate = true;  // each moved twice
  }
  half_gate = true;
  ASSERT_TRUE(probe.wait_for(1, std::chrono::seconds(60)));
  EXPECT_EQ(probe.value() / 10, 0u) << "messages from one sender arrived out of order";
  EXPECT_EQ(sender_workers.load(), 3u) << "the senders did not send from both workers";
  EXPECT_GT(moves, kSenders);
}

}  // namespace
}  // namespace reheap
