// Request and reply between reactors: Reactor::request, Reactor::reply, and what the asker gets.
//
// A reactor asks another one with request<&R::on_answer>(to, value, timeout) inside any of its
// hooks. The call returns a RequestId at once; later, exactly one Response<Reply> reaches
// R::on_answer, as an ordinary event of the asking reactor (on its worker, its heap current,
// never concurrently with its other hooks): the reply, or the reason there is none. The replier
// answers with reply(value) in its on_message or typed handler, or later with
// reply(address, value), keeping reply_address() in its heap. The outcomes:
//   ok()                       the reply arrived and decoded as Reply
//   RequestError::kTimeout     no reply within `timeout` (the replier does not answer, died with
//                              the request in its mailbox, or is slow); the runtime's timers,
//                              so a TestRuntime's virtual clock, measure it
//   RequestError::kRefused     the send was refused: refusal() says why (kNoSuchReactor for a
//                              dead or unknown target, kMailboxFull, kNoMemory when the message
//                              allocator is exhausted, kEncodeFailed, kShuttingDown)
//   RequestError::kBadReply    a reply came but did not decode as Reply
//   RequestError::kRestored    the asking reactor was restored from a snapshot (or restarted)
//                              while the request was pending (see "Snapshots" below)
// A refusal is also delivered later, as an event, never from inside request(): the continuation
// never runs re-entrantly inside the hook that asked.
//
// Correlation: the request's id travels in the envelope (not in the payload), and so does the
// reply's; the asker matches a reply to its pending request by that id, whatever else is in its
// mailbox. A reply whose request is no longer pending (it timed out, was refused or restored) is
// dropped and counted (ReactorStats::late_replies), never delivered. Ids are unique per asker: a
// counter in its heap, under a 32-bit epoch drawn from the runtime's entropy at its first request
// and again at each restore, so that the replies meant for an earlier incarnation of a restored
// reactor never match a request of the current one.
//
// Ordering: a reply and a timeout are two events of the asker, and the first delivered wins: the
// timeout fires through the asker's timers (one timer per request), the reply through its
// mailbox, and the worker delivers them in one deterministic order per run; a recording holds
// that order, so a replay repeats it. The loser is dropped (a late reply is counted; a late
// timer is ignored). A reply takes the place of the request's timer: the timer is cancelled.
//
// Continuations: a continuation is a member function of the asking reactor's class, named at the
// call (request<&R::fn>), so that no request is ever pending without one. It is kept in the
// reactor's heap as a pointer to a function of the program, as the typed handlers are
// (Reactor::handle): plain data, which a snapshot saves and a restore relocates like every
// pointer into the program. Closures (lambdas with captures, std::function) are not accepted:
// their state would hold pointers a snapshot cannot follow, and their code address is the
// build's own.
//
// Snapshots: the table of pending requests lives in the asker's heap, so a snapshot holds it. A
// reactor restored from a snapshot (Runtime::restore, here or in another process, or a restart
// policy falling back to its snapshot) fails each request that was pending at the snapshot with
// kRestored, as events right after on_restored (timers due at once): their replies, if any still
// come, were addressed to the incarnation that asked, and are dropped and counted as late. Why
// not keep them pending: in another process the replier and the reply's route are gone, and even
// here the snapshot may be older than requests answered since; a defined failure the reactor can
// retry beats a silent timeout. Moving a reactor to another worker (Runtime::move, placement) is
// not a restore, nor is an exact restart of a recorded reactor (which replays its log and loses
// nothing, no on_restored): its requests stay pending, and their replies and timeouts follow it.
//
// Recording: a message carrying a request or reply id is recorded with its id (record kind 30 of
// RECORDING_FORMAT.md, version 4), a timeout as the timer event it is; a replayed asker gets the
// recorded reply without the replier running, and a replayed replier replies under the recorded
// id.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "reheap/actor_ref.h"
#include "reheap/message.h"
#include "reheap/reactor_io.h"

namespace reheap {

class Reactor;

// Unique per asking reactor, never 0.
using RequestId = std::uint64_t;

enum class RequestError : std::uint8_t {
  kNone = 0,
  kTimeout = 1,
  kRefused = 2,
  kBadReply = 3,
  kRestored = 4,
};
const char* to_string(RequestError error) noexcept;

// What a request's continuation gets: the reply, or why there is none. Valid during the call.
template <class Reply>
class Response {
 public:
  Response(RequestId id, const Reply* value, RequestError error, SendResult refusal) noexcept
      : id_(id), value_(value), error_(error), refusal_(refusal) {}

  RequestId id() const noexcept { return id_; }
  bool ok() const noexcept { return value_ != nullptr; }
  explicit operator bool() const noexcept { return ok(); }
  // The reply; throws std::logic_error when there is none.
  const Reply& value() const {
    if (value_ == nullptr) throw std::logic_error("reheap::Response::value: the request failed");
    return *value_;
  }
  RequestError error() const noexcept { return error_; }
  // For kRefused: why the send was refused (kOk otherwise).
  SendResult refusal() const noexcept { return refusal_; }

 private:
  RequestId id_;
  const Reply* value_;
  RequestError error_;
  SendResult refusal_;
};

// Where a reply goes: the asker and its request's id. Plain data: a replier that answers later
// keeps it in its heap (and a snapshot keeps it with it).
struct ReplyAddress {
  ActorRef to{};
  RequestId id = 0;  // 0: the message was not a request; a reply is then a plain send
};

namespace detail {

// A request's outcome as the runtime hands it to a continuation's thunk.
struct RequestOutcome {
  RequestId id = 0;
  const Message* reply = nullptr;  // the reply message, when one came
  RequestError error = RequestError::kNone;
  SendResult refusal = SendResult::kOk;
};
using Continuation = void (*)(Reactor&, const RequestOutcome&);

}  // namespace detail
}  // namespace reheap
