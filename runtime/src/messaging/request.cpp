// Request and reply (reheap/request.h): the asker's table of pending requests, kept in its heap,
// and the replier's side. Every step goes through the reactor's host (send, timers, entropy), so a
// recording holds what a replay needs and a TestRuntime's virtual clock times the requests.
#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "messaging/request_table.h"
#include "reactor/host_slot.h"
#include "reactor/reactor_access.h"
#include "reheap/heap_scope.h"

namespace reheap {

const char* to_string(RequestError error) noexcept {
  switch (error) {
    case RequestError::kNone: return "none";
    case RequestError::kTimeout: return "timed out";
    case RequestError::kRefused: return "the request could not be sent";
    case RequestError::kBadReply: return "the reply did not decode as the expected type";
    case RequestError::kRestored: return "the asking reactor was restored while the request was pending";
  }
  return "unknown";
}

namespace {

// A new epoch for the asker's request ids (high 32 bits), from the runtime's entropy through the
// host (recorded, replayed). Never 0, so that no id is 0 and no two epochs of one asker share ids
// but by chance (one in 2^32 per restore).
std::uint64_t new_epoch(ReactorHost& host) {
  std::uint64_t seed[2] = {0, 0};
  host.seed(seed);
  const std::uint64_t epoch = (seed[0] ^ seed[1]) & 0xffff'ffffu;
  return (epoch == 0 ? 1 : epoch) << 32;
}

detail::PendingRequest take(std::vector<detail::PendingRequest>& pending, std::size_t i) {
  detail::PendingRequest p = pending[i];
  // Erased in place, not swapped with the last: the order of the table stays the order of the
  // requests, which keeps restore's failures in request order.
  pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
  return p;
}

}  // namespace

std::size_t Reactor::requests_pending() const noexcept {
  return detail::ReactorAccess::book(*this).requests.pending.size();
}

RequestId Reactor::request_erased(ActorRef to, detail::Envelope* e, SendResult encoded,
                                  std::uint64_t reply_type, std::chrono::nanoseconds timeout,
                                  detail::Continuation then) {
  ReactorHost* host = detail::host_of(this);
  if (host == nullptr || timeout.count() < 0) [[unlikely]] {
    if (e != nullptr) detail::free_envelope(e);
    if (host == nullptr) detail::throw_outside_hooks("request");
    HeapScope system(nullptr);
    throw std::invalid_argument("reheap::Reactor::request: negative timeout");
  }
  // A timeout of centuries would overflow a clock's time point (the TestRuntime's too).
  constexpr std::chrono::nanoseconds kLongest = std::chrono::hours(24 * 365 * 10);
  timeout = std::min(timeout, kLongest);
  detail::PendingRequests& table = detail::ReactorAccess::requests(*this);
  if (table.next == 0) table.next = new_epoch(*host) | 1;
  const RequestId id = table.next++;
  const TimerId timer = detail::ReactorAccess::next_timer(*this);
  // In the table before the send: whatever happens next, the request has its entry.
  table.pending.push_back(
      detail::PendingRequest{id, reply_type, timer, then, RequestError::kNone, SendResult::kOk});
  SendResult result = encoded;
  if (e != nullptr) {
    e->exchange = detail::kRequestMessage;
    e->correlation = id;
    result = host->send(to, e);
  }
  if (result != SendResult::kOk) {
    // A refusal is delivered as an event too, by a timer due at once: the continuation never
    // runs inside the hook that asked.
    detail::PendingRequest& p = table.pending.back();
    p.failed = RequestError::kRefused;
    p.refusal = result;
    host->start_timer(timer, std::chrono::nanoseconds(0), std::chrono::nanoseconds(0));
  } else {
    host->start_timer(timer, timeout, std::chrono::nanoseconds(0));
  }
  return id;
}

SendResult Reactor::reply_erased(const ReplyAddress& to, detail::Envelope* e, SendResult encoded) {
  ReactorHost* host = detail::host_of(this);
  if (host == nullptr) [[unlikely]] {
    if (e != nullptr) detail::free_envelope(e);
    detail::throw_outside_hooks("reply");
  }
  if (e == nullptr) return encoded;
  if (to.id != 0) {
    e->exchange = detail::kReplyMessage;
    e->correlation = to.id;
  }
  return host->send(to.to, e);
}

ReplyAddress Reactor::reply_address() const {
  const detail::CurrentMessage current = detail::t_current_message;
  if (current.reactor != this || current.message == nullptr) [[unlikely]] {
    if (detail::host_of(this) == nullptr) detail::throw_outside_hooks("reply_address");
    HeapScope system(nullptr);
    throw std::logic_error(
        "reheap::Reactor::reply: no message is being handled (reply in on_message or a typed "
        "handler, or keep reply_address() there and reply to it later)");
  }
  const detail::Envelope& e = detail::MessageAccess::envelope(*current.message);
  return ReplyAddress{current.message->sender(),
                      e.exchange == detail::kRequestMessage ? e.correlation : 0};
}

namespace detail {

constinit thread_local CurrentMessage t_current_message [[gnu::tls_model("initial-exec")]];

void deliver_reply(Reactor& reactor, const Message& reply) {
  const RequestId id = MessageAccess::envelope(reply).correlation;
  std::vector<PendingRequest>& pending = ReactorAccess::requests(reactor).pending;
  ReactorHost* host = host_of(&reactor);
  for (std::size_t i = 0; i < pending.size(); ++i) {
    if (pending[i].id != id) continue;
    // A request already failed (refused, restored) waits for its prompt timer: too late too.
    if (pending[i].failed != RequestError::kNone) break;
    const PendingRequest p = take(pending, i);
    if (host != nullptr) host->cancel_timer(p.timer);
    p.then(reactor, RequestOutcome{p.id, &reply, RequestError::kNone, SendResult::kOk});
    return;
  }
  if (host != nullptr) host->count_late_reply();
}

bool deliver_request_timer(Reactor& reactor, TimerId timer) {
  std::vector<PendingRequest>& pending = ReactorAccess::requests(reactor).pending;
  for (std::size_t i = 0; i < pending.size(); ++i) {
    if (pending[i].timer != timer) continue;
    const PendingRequest p = take(pending, i);
    const RequestError why = p.failed == RequestError::kNone ? RequestError::kTimeout : p.failed;
    p.then(reactor, RequestOutcome{p.id, nullptr, why, p.refusal});
    return true;
  }
  return false;
}

void fail_requests_on_restore(Reactor& reactor) {
  PendingRequests& table = ReactorAccess::requests(reactor);
  if (table.next == 0) return;  // never asked: nothing to do, and no entropy drawn
  ReactorHost* host = host_of(&reactor);
  if (host == nullptr) return;
  // Replies addressed to the incarnation that was saved must not match the requests this one
  // makes from the same counter.
  table.next = new_epoch(*host) | (table.next & 0xffff'ffffu);
  for (PendingRequest& p : table.pending) {
    if (p.failed != RequestError::kNone) continue;  // a refusal still to deliver keeps its reason
    host->cancel_timer(p.timer);
    p.failed = RequestError::kRestored;
    p.timer = ReactorAccess::next_timer(reactor);
    host->start_timer(p.timer, std::chrono::nanoseconds(0), std::chrono::nanoseconds(0));
  }
}

}  // namespace detail
}  // namespace reheap
