// TestRuntime::Impl: the reactors, the pending work and the test host of a TestRuntime (see
// test_runtime.h for the order in which the pending work is delivered).
//
// Ownership: every container here lives in the system heap. The HostOutputs methods are called
// from inside reactors' hooks, with the reactor's heap current, so each makes the system heap
// current before it touches them.
#pragma once

#include <deque>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "exclusive_use.h"
#include "messaging/envelope.h"  // runtime/src
#include "reheap/snapshot.h"
#include "reheap/testing/test_runtime.h"
#include "test_host.h"

namespace reheap::testing {

namespace detail {

enum class ReactorState : std::uint8_t {
  kUnstarted,  // spawned; on_start pending
  kLive,
  kStopping,   // on_stop pending
  kStopped,    // gone: reactor and heap destroyed
  kFailed,     // a hook threw: no more events; reactor and heap kept for inspection
};

struct Entry {
  ActorRef ref;
  SpawnOptions options;
  HeapPtr heap;
  Reactor* reactor = nullptr;
  ReactorState state = ReactorState::kUnstarted;
  bool restored = false;  // its first event is on_restored, not on_start
  std::unique_ptr<Snapshotter> snapshotter;  // made on the first snapshot request
};

struct PendingMessage {
  ActorRef from;
  ActorRef to;
  reheap::detail::Envelope* envelope;  // null: a stop request from the test (TestRuntime::stop)
};

struct Timer {
  std::chrono::nanoseconds due;  // since the clock's epochs
  TimerId id;
  ActorRef owner;
  std::chrono::nanoseconds period;
};

// Due time, then timer id, then reactor: the order timers fire in, whatever order they were
// started in.
struct TimerOrder {
  bool operator()(const Timer& a, const Timer& b) const noexcept {
    if (a.due != b.due) return a.due < b.due;
    if (a.id != b.id) return a.id < b.id;
    return a.owner.value() < b.owner.value();
  }
};

struct SnapshotJob {
  ActorRef requester;
  SnapshotRequestId id;
  ActorRef target;
  std::filesystem::path file;
  SnapshotKind kind;
};

// Told of every message just before it is delivered, while a check watches (message_check.cpp).
class DeliveryWatch {
 public:
  virtual void delivering(const PendingMessage& pending, const Message& message) = 0;

 protected:
  ~DeliveryWatch() = default;
};

}  // namespace detail

struct TestRuntime::Impl final : detail::HostOutputs {
  explicit Impl(const TestRuntimeConfig& c);

  detail::ExclusiveUse use;  // the public operations that run or change anything enter it

  // ---- the door: every event goes through deliver() ----
  // Delivers `event` to `e` and then does what the hook asked for after it (snapshot jobs, the
  // stop). Reports a failure per the policy (kRethrow: throws ReactorFailure).
  void deliver(detail::Entry& e, const Event& event, ActorRef sender);
  bool step();
  bool step_start_or_stop();  // the first half of step(): the oldest pending stop, else start
  bool step_message();        // the second half: one message (pick_message)
  // Takes messages[index] out of the queue and delivers it; false if its receiver is gone (a dead
  // letter, counted) or it was the test's stop request for a reactor no longer live.
  bool deliver_message(std::size_t index);
  // Fires the earliest timer if it is due by `limit`, moving the clock to its due time, without
  // running what it caused; false if none is due by then. Counts a delivered timer in `*delivered`.
  bool fire_next_timer(std::chrono::nanoseconds limit, std::size_t* delivered);
  // The first events of a restored reactor: its timers re-armed, on_closed for each socket it
  // had, on_restored.
  void start_restored(detail::Entry& e);
  // Registers a reactor: a fresh one under a new reference, a restored one under its own.
  ActorRef admit(HeapPtr heap, Reactor* reactor, const SpawnOptions& options, bool restored);
  std::size_t advance_to(std::chrono::nanoseconds target);

  detail::Entry* find(ActorRef ref) noexcept;
  // Destroys the reactor (its destructor runs if `run_destructor`), its heap and its timers.
  void destroy(detail::Entry& e, bool run_destructor) noexcept;
  void drop_timers(ActorRef owner) noexcept;
  std::size_t pick_message();  // the index in `messages` of the next one to deliver
  void run_snapshot_jobs();
  void run_snapshot(const detail::SnapshotJob& job);
  SnapshotInfo save(detail::Entry& target, const std::filesystem::path& file, SnapshotKind kind);

  // ---- HostOutputs ----
  SendResult send(ActorRef self, ActorRef to, reheap::detail::Envelope* envelope) override;
  ActorRef spawn(ActorRef self, const SpawnOptions& options, ReactorHost::Construct construct,
                 void* arguments) override;
  void stop(ActorRef self) override;
  void request_snapshot(ActorRef self, SnapshotRequestId id, ActorRef target,
                        const std::filesystem::path& file, SnapshotKind kind) override;
  void start_timer(ActorRef self, TimerId id, std::chrono::nanoseconds delay,
                   std::chrono::nanoseconds period) override;
  void cancel_timer(ActorRef self, TimerId id) override;

  TestRuntimeConfig config;
  VirtualClock clock;
  SeedStream entropy;   // the reactors' random() seeds
  SeedStream shuffle;   // MessageOrder::kShuffle's choices
  detail::TestHost host;

  std::vector<std::unique_ptr<detail::Entry>> entries;  // in admission order; spawned ones by slot - 1
  // Restored reactors keep the reference they were saved with, which names no slot of this
  // runtime: they are found through this map (reference value -> index in `entries`).
  std::unordered_map<std::uint64_t, std::size_t> restored;
  std::deque<ActorRef> starts;
  std::deque<ActorRef> stops;
  std::deque<detail::PendingMessage> messages;  // in send order
  std::set<detail::Timer, detail::TimerOrder> timers;
  std::vector<detail::SnapshotJob> snapshot_jobs;  // asked for during the current hook
  std::vector<ReactorFailure> failures;
  // Heaps of spawns whose constructor threw and left blocks behind (the exception's own, on its
  // way to the caller): kept until the end rather than freed under it.
  std::vector<HeapPtr> abandoned;
  detail::DeliveryWatch* watch = nullptr;  // a check's, while it runs
  std::uint64_t events = 0;
  std::uint64_t dead_letters = 0;
};

}  // namespace reheap::testing
