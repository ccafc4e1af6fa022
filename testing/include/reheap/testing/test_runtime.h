// TestRuntime: a deterministic runtime for unit tests of reactors, on the test's own thread.
//
// What it is. A reheap::Runtime runs reactors on worker threads, with real clocks, real entropy
// and a message order that depends on scheduling. A TestRuntime runs the same reactor classes,
// unchanged, one event at a time when the test says so (step, run, advance), with no thread but
// the test's: every reactor's operations go to a test host (reactor_host.h) that answers the time
// from a VirtualClock, the random seeds from a SeedStream of TestRuntimeConfig::seed, and keeps
// every output (sends, timers, spawns, stops, snapshot requests) in queues that the test drains.
// A test therefore is a sequence of steps whose outcome is the same in every run.
//
// Data model. Each reactor has its own heap, made current for each of its events, exactly as on a
// worker; between steps the test reads it with reactor<R>(ref) and heap(ref). References are
// ActorRef::make(config.origin, slot, 1) with slots counted from 1 in spawn order, so they too are
// the same in every run. Pending work is: starts (on_start of reactors spawned and not yet
// started), stops (on_stop of reactors that called Reactor::stop()), messages (the test's stop
// requests among them), and timers.
//
// Order. step() delivers, in this order of priority: the oldest pending stop, the oldest pending
// start, then one message. Starts and stops go first so that a reactor is started before any
// message reaches it and stops right after the hook that asked for it. Messages are FIFO per
// (sender, receiver) always; among the heads of those channels, MessageOrder::kFifo takes the
// oldest sent (one global FIFO), MessageOrder::kShuffle takes one at random from a stream of the
// seed, the heads ranked by send order so that the choice is deterministic. Messages sent from the
// test have the null sender: they form one channel per receiver.
//
// Time. Timers fire only in advance()/advance_to() (and ask()): run() never moves the clock, so a
// test sees every state between two instants. advance first runs what is pending at the current
// time, then, for each due timer in order of due time, then timer id, then reactor reference, moves
// the clock to its due time, fires it (a periodic timer is re-armed before its hook runs, so it may
// cancel itself) and runs what that caused; then sets the clock to the target. The time a reactor
// reads is fixed during an event, since the clock moves only between events.
//
// Checks (message_check.h). expect(pattern) states what the next message of a mailbox is, and
// delivers it: it runs pending stops and starts first (as step() does), then looks for the oldest
// pending message whose addresses fit the pattern's from/to (any, for an address not given). While
// there is none, it steps other pending work (messages to other mailboxes, which cannot overtake
// the one looked for) and, given a span, fires the timers due within it, each at its due time;
// when none comes it fails ("no such message"), listing what arrived meanwhile, the clock standing
// at the end of the span. When there is one, it is the answer: of the pattern's type and accepted
// by its predicate, it is delivered and the check passes; otherwise the check fails naming it and
// leaves it pending. expect_none(pattern, span) runs as advance(span) does, watching every message
// delivered, and fails if one fits the whole pattern, listing each with its time; the clock then
// stands at the end of the span either way. Both enter as the other operations do (Threading), and
// a hook's failure under kRethrow passes through them.
//
// Spawns and stops. Reactor::spawn from a hook builds the child at once, on this TestRuntime, its
// on_start pending; SpawnOptions::name and heap_limit apply, the rest has no meaning here. A
// reactor that stops or fails takes its pending messages with it: they are dead letters, counted
// in dead_letters(); a send to it afterwards answers kNoSuchReactor, as on a worker.
//
// Snapshots. TestRuntime::restore brings a saved reactor back, under its own reference.
// Reactor::request_snapshot is carried out as soon as the requesting hook returns,
// before any other event, with the target's heap saved by a Snapshotter as on a worker (its armed
// timers written into it with the time they have left); the SnapshotDone answer is then a message
// from the target to the requester. The file exists when the step() that delivered the request
// returns.
//
// Failures. A hook that throws fails its reactor as the runtime's kStop policy does: it gets no
// more events (no on_stop either), sends to it answer kNoSuchReactor, and its heap is kept for
// inspection until the TestRuntime goes. What is reported is a ReactorFailure (the reactor's
// reference, SpawnOptions name and C++ type, the hook, the exception's C++ type and what()):
// FailurePolicy::kRethrow (the default) throws it from the step()/run()/advance() call that
// delivered the event, so an unexpected exception fails the test where it happened; kCollect
// appends it to failures() and carries on, for tests of failure handling. The original exception
// object is not rethrown: it may live in the reactor's heap, which must not be freed from outside
// that heap.
//
// What it does not do. No sockets: TCP operations throw std::logic_error ("TestRuntime has no
// sockets"); a test feeds socket events with deliver(ref, Event) instead, which delivers any kind
// of event at once. Mailbox bounds and supervision policies other than kStop are not modelled.
// Reactor::runtime() throws std::logic_error: there is no reheap::Runtime. worker() is 0.
//
// Threading: a TestRuntime runs its reactors on the calling thread and is not thread-safe. A thread
// calling an operation that runs or changes anything (spawn, send, step, run, run_until, deliver,
// stop, advance, advance_to, run_until_received, retire, restore) while another thread is inside
// one gets std::logic_error naming both, and nothing changes (a refused send frees its message);
// one thread after another may use it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "reheap/actor_ref.h"
#include "reheap/event.h"
#include "reheap/heap.h"
#include "reheap/message.h"
#include "reheap/reactor.h"
#include "reheap/spawn_options.h"
#include "reheap/testing/message_check.h"
#include "reheap/testing/probe.h"
#include "reheap/testing/reactor_failure.h"
#include "reheap/testing/virtual_clock.h"

namespace reheap::testing {

enum class MessageOrder : std::uint8_t {
  kFifo,     // the oldest message sent goes first
  kShuffle,  // a seeded choice among the oldest message of each (sender, receiver) channel
};

enum class FailurePolicy : std::uint8_t {
  kRethrow,  // the call that delivered the failing event throws the ReactorFailure
  kCollect,  // the ReactorFailure goes to failures(); the run carries on
};

struct TestRuntimeConfig {
  // The one source of nondeterminism: the shuffle's choices and the reactors' random() seeds come
  // from two independent streams of it, so turning the shuffle on does not change random().
  std::uint64_t seed = 0;
  MessageOrder order = MessageOrder::kFifo;
  FailurePolicy failures = FailurePolicy::kRethrow;
  std::uint32_t origin = 1;  // the origin of the references it mints
  std::chrono::system_clock::time_point system_epoch = VirtualClock::kSystemEpoch;
  std::chrono::steady_clock::time_point steady_epoch = VirtualClock::kSteadyEpoch;
};

class TestRuntime {
 public:
  explicit TestRuntime(TestRuntimeConfig config = {});
  // Stops every live reactor (on_stop, in spawn order), then destroys the reactors and their
  // heaps, and frees the messages still pending.
  ~TestRuntime();
  TestRuntime(const TestRuntime&) = delete;
  TestRuntime& operator=(const TestRuntime&) = delete;

  // Creates a heap, constructs R(args...) in it, sets its reference and makes it the heap's root.
  // on_start is delivered by the next step. The constructor's exceptions propagate.
  template <class R, class... Args>
  ActorRef spawn(const SpawnOptions& options, Args&&... args) {
    static_assert(std::is_base_of_v<Reactor, R>, "R must derive from reheap::Reactor");
    std::tuple<Args&&...> arguments(std::forward<Args>(args)...);
    return spawn_constructed(options, &reheap::detail::construct_packed<R, Args...>, &arguments);
  }
  template <class R, class... Args>
    requires(!reheap::detail::kFirstIsSpawnOptions<Args...>)
  ActorRef spawn(Args&&... args) {
    return spawn<R>(SpawnOptions{}, std::forward<Args>(args)...);
  }

  // Restores a reactor from a snapshot file (of Runtime::snapshot, of a request_snapshot here or
  // on a worker) under the reference it was saved with. Its first step re-arms the timers it had
  // (with the time they had left), delivers on_closed(connection_aborted) for each socket it had,
  // then on_restored - the order a worker uses. Throws what reheap::restore throws (SnapshotError
  // kCorrupt if the heap's root is not a reactor), std::logic_error if a reactor here has that
  // reference.
  ActorRef restore(const std::filesystem::path& file, const SpawnOptions& options = {});

  // Queues `value` for `to` from the test (the null sender).
  template <class T>
  SendResult send(ActorRef to, const T& value) {
    return send_from(ActorRef(), to, value);
  }
  // Queues `value` for `to` as if `from` (a reactor of this runtime, or null) had sent it.
  template <class T>
  SendResult send_from(ActorRef from, ActorRef to, const T& value) {
    SendResult result = SendResult::kOk;
    reheap::detail::Envelope* e = reheap::detail::encode(value, &result);
    if (e == nullptr) return result;
    return send_envelope(from, to, e);
  }

  // ---- driving ----
  bool step();               // delivers one pending event (see Order); false if none was pending
  std::size_t run();         // steps until nothing is pending; returns the events delivered
  // Steps until pred() holds (checked before each step) or nothing is pending; returns pred().
  bool run_until(const std::function<bool()>& pred);
  // Delivers `event` to `ref` now, through the same door as every other event (for socket events
  // and other inputs the test makes up). False if `ref` names no live reactor.
  bool deliver(ActorRef ref, const Event& event);
  // Stops `ref` from the test, as Runtime::stop does: after the messages the test sent it before
  // (the request travels with them), it gets on_stop; a reactor not started yet just goes. False
  // if it is not live.
  bool stop(ActorRef ref);

  // ---- time ----
  std::chrono::system_clock::time_point now() const noexcept;
  std::chrono::steady_clock::time_point steady_now() const noexcept;
  // See Time above. Both return the events delivered.
  std::size_t advance(std::chrono::nanoseconds duration);
  std::size_t advance_to(std::chrono::steady_clock::time_point when);
  // The due time of the earliest armed timer, if any.
  std::optional<std::chrono::steady_clock::time_point> next_timer() const;

  // ---- ask ----
  // Sends `request` to `to` from a temporary Probe and runs until a Reply reaches the probe,
  // advancing the clock from timer to timer but by at most `timeout`; nullopt if none came, the
  // clock then standing `timeout` after the call; nullopt at once if the request was refused
  // (`*sent`, if given, says why; kOk when it was delivered), as in Runtime::ask. Other work
  // pending at the call runs as well (it is one runtime). The convention: the asked reactor
  // answers to sender(), in the handler or later (from a timer, or after asking others). The probe is stopped and its heap destroyed
  // before ask returns, so a late answer is refused (kNoSuchReactor) and lost. A failure of a
  // hook under kRethrow passes through ask.
  template <class Reply, class Request>
  std::optional<Reply> ask(ActorRef to, const Request& request,
                           std::chrono::nanoseconds timeout = std::chrono::seconds(1),
                           SendResult* sent = nullptr) {
    SpawnOptions options;
    options.name = "ask";
    const ActorRef probe = spawn<Probe>(options);
    SendResult result = send_from(probe, to, request);
    if (sent != nullptr) *sent = result;
    std::optional<Reply> reply;
    try {
      if (result == SendResult::kOk) {
        run_until_received(probe, message_type_id<Reply>(), timeout);
        reply = reactor<Probe>(probe).template last<Reply>();
      }
    } catch (...) {
      retire(probe);  // a ReactorFailure on the way, or a reply that does not decode
      throw;
    }
    retire(probe);
    return reply;
  }

  // ---- checks (see Checks above) ----
  // The next message of the mailbox `pattern`'s addresses pick is one of the pattern; delivers it.
  // Runs what is pending meanwhile but moves no clock: a message a timer would send is not looked
  // for (give a span).
  template <class T>
  CheckResult<T> expect(const MessagePattern<T>& pattern) {
    return check_expect(pattern, false, std::chrono::nanoseconds(0));
  }
  // As above, firing the timers due within `within` while none is pending.
  template <class T>
  CheckResult<T> expect(const MessagePattern<T>& pattern, std::chrono::nanoseconds within) {
    return check_expect(pattern, true, within);
  }
  // No message of the pattern is delivered while the clock advances by `within` (as advance()).
  template <class T>
  CheckResult<> expect_none(const MessagePattern<T>& pattern, std::chrono::nanoseconds within) {
    CheckOutcome outcome = check_none(spec_of(pattern, nullptr), within);
    return CheckResult<>(outcome.passed, std::move(outcome.text));
  }

  // ---- inspection between steps ----
  // The reactor `ref` names, as R; throws std::out_of_range if it names none (stopped reactors
  // are gone; failed ones are kept), std::bad_cast if it is not an R.
  template <class R>
  R& reactor(ActorRef ref) {
    return dynamic_cast<R&>(reactor_base(ref));
  }
  Reactor& reactor_base(ActorRef ref);
  Heap& heap(ActorRef ref);
  bool alive(ActorRef ref) const noexcept;  // started or not, not stopped and not failed
  std::size_t pending() const noexcept;     // starts, stops and messages waiting (not timers)
  std::uint64_t events_delivered() const noexcept;
  std::uint64_t dead_letters() const noexcept;  // messages dropped because their receiver went
  const std::vector<ReactorFailure>& failures() const noexcept;

 private:
  friend class Replay;  // Replay::continue_in hands a replayed reactor over
  struct Impl;
  // What the spawn templates call; also the test host's answer to Reactor::spawn.
  ActorRef spawn_constructed(const SpawnOptions& options, reheap::detail::ConstructReactor construct,
                             void* arguments);
  // What send_from calls. Takes the envelope (queued or freed).
  SendResult send_envelope(ActorRef from, ActorRef to, reheap::detail::Envelope* envelope);
  void run_until_received(ActorRef probe, std::uint64_t type_id, std::chrono::nanoseconds timeout);
  void retire(ActorRef ref);  // stops `ref` without on_stop and destroys its heap

  friend class detail::MessageChecks;
  using CheckSpec = detail::CheckSpec;
  using CheckOutcome = detail::CheckOutcome;
  template <class T>
  static CheckSpec spec_of(const MessagePattern<T>& pattern, std::optional<typename MessagePattern<T>::Value>* value) {
    CheckSpec spec;
    spec.from = pattern.sender();
    spec.to = pattern.receiver();
    spec.predicate_text = &pattern.predicate_text();
    spec.pattern = &pattern;
    spec.value = value;
    if constexpr (!std::is_void_v<T>) {
      spec.type_id = message_type_id<T>();
      spec.any_type = false;
      spec.accepts = [](const void* p, const Message& m, void* v, std::string* why) {
        return static_cast<const MessagePattern<T>*>(p)->accepts(m, static_cast<std::optional<T>*>(v), why);
      };
    }
    return spec;
  }
  template <class T>
  CheckResult<T> check_expect(const MessagePattern<T>& pattern, bool timed, std::chrono::nanoseconds within) {
    std::optional<typename MessagePattern<T>::Value> value;
    CheckOutcome outcome = check_next(spec_of(pattern, &value), timed, within);
    CheckResult<T> result(outcome.passed, std::move(outcome.text), outcome.from, outcome.to);
    if constexpr (!std::is_void_v<T>) {
      if (outcome.passed && value) result.set_value(std::move(*value));
    }
    return result;
  }
  CheckOutcome check_next(const CheckSpec& spec, bool timed, std::chrono::nanoseconds within);
  CheckOutcome check_none(const CheckSpec& spec, std::chrono::nanoseconds within);

  std::unique_ptr<Impl> impl_;
};

}  // namespace reheap::testing
