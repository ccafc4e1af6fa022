// How a reactor is started: its mailbox bound, its supervision policy, where it runs.
//
// Where: `worker` = kAnyWorker (the default) starts the reactor on the next worker round robin,
// and lets the runtime's placement policy (RuntimeConfig::placement, runtime.h) move it next to a
// reactor it mostly talks with. An explicit `worker` pins it: it runs there until it stops or
// Runtime::move moves it (which pins it to its new worker). Pin reactors that must stay apart
// (say, two that each need a core of their own) or that must share a worker with a listener.
//
// Mailboxes: unbounded by default. A bounded mailbox (capacity > 0) applies its overflow policy
// when a send finds it full:
//   kReject      the send fails with SendResult::kMailboxFull; the receiver never sees it. The
//                bound is exact: at most `capacity` messages wait at any moment.
//   kDropOldest  the send succeeds; before handling each message the receiver drops its oldest
//                waiting messages until `capacity` remain, counting them in
//                ReactorStats::dropped. Until then the queue may hold more than `capacity`
//                (senders never wait for the receiver), so this bounds what the receiver
//                processes, not memory in flight. A stop request is never dropped.
//
// Supervision: an exception escaping a handler (including std::bad_alloc from a heap at its
// limit, and MessageError from Message::get) never leaves the worker thread. The runtime reports
// a Failure to the RuntimeConfig::on_failure callback and to the `supervisor` reactor (as a
// ReactorFailed message), then applies the policy:
//   kStop     the reactor is stopped (on_stop is not called: its state is suspect) and its
//             heap destroyed.
//   kRestart  the reactor comes back, keeping its ActorRef and its mailbox; the message that failed
//             is not delivered again. After `max_restarts` restarts within `restart_window` it is
//             stopped instead.
//             A recorded reactor (recording.h) comes back exactly: with the state it had just
//             before the failing event, byte for byte. The runtime restores its recording's anchor
//             (or a later Runtime::snapshot of it) and replays the log since, answering the
//             reactor from the log and suppressing every output (what those events sent, spawned,
//             wrote or armed happened already). Its timers run on as they were before the failing
//             event (those it cancelled come back, those it started go), its sockets stay open
//             (those it opened are closed), and on_restored is not called: nothing was lost. The
//             replay runs in slices between the worker's turns (about a millisecond each), so its
//             worker's other reactors wait one slice at most; meanwhile the reactor's messages wait
//             in its mailbox, its timers are parked and its socket events kept for after it. If the
//             replay departs from the log (a reactor that is not deterministic: DETERMINISM.md),
//             the restart falls back to the unrecorded one below, and the report says so.
//             Any other reactor is restored from its last snapshot: the last Runtime::snapshot
//             file taken of it, else the checkpoint the runtime took of it in memory right after
//             on_start, and gets on_restored(). What is lost then: the effects on the heap of
//             every event handled between that snapshot and the failure (their messages were
//             taken from the mailbox; what they sent, spawned or wrote stays done). Snapshot often
//             (request_snapshot), or record the reactor, to lose less.
//             ReactorFailed::restart says which of the two happened.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "reheap/actor_ref.h"
#include "reheap/heap.h"
#include "reheap/recording.h"

namespace reheap {

class Reactor;

enum class OverflowPolicy : std::uint8_t { kReject, kDropOldest };

struct MailboxConfig {
  std::uint32_t capacity = 0;  // 0: unbounded
  OverflowPolicy overflow = OverflowPolicy::kReject;
};

enum class SupervisionPolicy : std::uint8_t { kStop, kRestart };

inline constexpr int kAnyWorker = -1;

struct SpawnOptions {
  std::string name;                  // for reports and statistics
  int worker = kAnyWorker;           // pinned to this worker, or kAnyWorker: placed (see above)
  MailboxConfig mailbox;
  SupervisionPolicy policy = SupervisionPolicy::kStop;
  int max_restarts = 5;
  std::chrono::milliseconds restart_window{10'000};
  ActorRef supervisor;               // receives ReactorFailed messages (optional)
  std::size_t heap_limit = kUnlimited;  // HeapConfig::limit_bytes of the reactor's heap
  RecordingOptions recording;  // kInherit: RuntimeConfig::recording (see recording.h)
};

namespace detail {
template <class... Args>
inline constexpr bool kFirstIsSpawnOptions = false;
template <class First, class... Rest>
inline constexpr bool kFirstIsSpawnOptions<First, Rest...> =
    std::is_same_v<std::remove_cvref_t<First>, SpawnOptions>;

// The spawn templates (Reactor::spawn, Runtime::spawn, TestRuntime::spawn) pack their arguments
// in a tuple of references and hand this function to a non-template spawn, which calls it with
// the new heap current so that R(args...) is built in that heap.
using ConstructReactor = Reactor* (*)(void* packed);
template <class R, class... Args>
Reactor* construct_packed(void* packed) {
  return std::apply([](auto&&... a) -> Reactor* { return new R(std::forward<decltype(a)>(a)...); },
                    std::move(*static_cast<std::tuple<Args&&...>*>(packed)));
}
}  // namespace detail

}  // namespace reheap
