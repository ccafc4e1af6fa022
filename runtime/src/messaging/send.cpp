// Sending: from a reactor or from outside, to a mailbox, scheduling the receiver (see
// runtime.h for the ordering promise and cell.h for the scheduling handshake).
#include "messaging/envelope.h"
#include "messaging/outbox.h"
#include "reheap/runtime.h"
#include "runtime_impl.h"
#include "scheduling/worker.h"

namespace reheap::detail {
namespace {

// `from`: the sending reactor's cell, for its statistics, or null; `sender`: the name the message
// goes out under.
SendResult deliver(RuntimeImpl& rt, Cell* from, std::uint64_t sender, ActorRef to,
                   Envelope* e) noexcept {
  Cell* target = rt.cells.find(to);
  if (target == nullptr) [[unlikely]] {
    free_envelope(e);
    return SendResult::kNoSuchReactor;
  }
  e->receiver = to.value();
  e->sender = sender;
  e->counted = 0;
  if (const std::uint32_t capacity = target->capacity.load(std::memory_order_relaxed);
      capacity != 0) [[unlikely]] {
    const std::uint32_t before =
        target->mailbox.bounded_length.fetch_add(1, std::memory_order_relaxed);
    if (before >= capacity && e->encoding != Encoding::kSystem &&
        target->reject_when_full.load(std::memory_order_relaxed)) {
      target->mailbox.bounded_length.fetch_sub(1, std::memory_order_relaxed);
      target->rejected.fetch_add(1, std::memory_order_relaxed);
      free_envelope(e);
      return SendResult::kMailboxFull;
    }
    e->counted = 1;
  }
  Worker* here = Worker::current();
  if (here != nullptr && &here->runtime() != &rt) here = nullptr;
  rt.count_sent(here);
  if (here == nullptr) {
    post(target, e, e, 1);
  } else if (from != nullptr && e->counted == 0 && e->encoding != Encoding::kSystem &&
             here->in_event()) {
    // A hook's message to an unbounded mailbox. A system message (a snapshot request) is not
    // held: request_snapshot promises that the request is in the target's mailbox when it
    // returns, ahead of whatever stops the target later.
    here->outbox().add(target, e);
  } else {
    here->outbox().flush();  // this thread's earlier sends go first
    post(target, e, e, 1);
  }
  if (from != nullptr) from->stats.messages_out++;
  return SendResult::kOk;
}

}  // namespace

void post(Cell* target, Envelope* first, Envelope* last, std::uint32_t n) noexcept {
  target->mailbox.push(first, last, n);
  if (target->scheduled.load(std::memory_order_seq_cst) == 0 &&
      target->scheduled.exchange(1, std::memory_order_seq_cst) == 0) {
    target->worker.load(std::memory_order_acquire)->schedule(target);
  }
}

SendResult send_envelope(Cell* from, ActorRef to, Envelope* e, SendResult encode_result) noexcept {
  if (e == nullptr) return encode_result;
  RuntimeImpl& rt = runtime_of(from);
  if (rt.stopping_all.load(std::memory_order_relaxed)) [[unlikely]] {
    free_envelope(e);
    return SendResult::kShuttingDown;
  }
  return deliver(rt, from, from->id.load(std::memory_order_relaxed), to, e);
}

SendResult send_as(RuntimeImpl& rt, ActorRef sender, ActorRef to, Envelope* e,
                   SendResult encode_result) noexcept {
  if (e == nullptr) return encode_result;
  if (rt.stopping_all.load(std::memory_order_relaxed)) [[unlikely]] {
    free_envelope(e);
    return SendResult::kShuttingDown;
  }
  return deliver(rt, nullptr, sender.value(), to, e);
}

SendResult send_outside(RuntimeImpl* rt, ActorRef to, Envelope* e,
                        SendResult encode_result) noexcept {
  if (e == nullptr) return encode_result;
  if (!rt->accepting.load(std::memory_order_relaxed)) [[unlikely]] {
    free_envelope(e);
    return SendResult::kShuttingDown;
  }
  return deliver(*rt, nullptr, 0, to, e);
}

SendResult send_system(RuntimeImpl& rt, ActorRef to, SystemMessage what) noexcept {
  Envelope* e = make_system_envelope(what);
  if (e == nullptr) return SendResult::kNoMemory;
  return deliver(rt, nullptr, 0, to, e);
}

}  // namespace reheap::detail
