// Mailbox: a reactor's queue of envelopes. Many threads push, one (the reactor's worker) pops.
//
// An intrusive MPSC queue after Dmitry Vyukov's: producers append with one exchange on `back_`
// and then link the previous last node to theirs; the consumer walks from `front_` along the
// links, in push order, touching each envelope once (the stack this replaces reversed every
// batch first, a second pass over envelopes that, with a large backlog, had left the cache).
// Pushes are linearized by the exchange, so per-producer FIFO holds; a producer may append a
// whole chain of its envelopes at once (the worker's Outbox does, outbox.h), which costs the
// same single exchange.
//
// The sentinel (the "stub" node of Vyukov's queue): an empty queue is `front_` == `back_` ==
// &sentinel_. The consumer never hands out the last linked node while nothing follows it (it
// needs its `next` to move on); when it reaches a last node, it appends the sentinel behind it,
// and the node becomes poppable once linked.
//
// "Pushed, not yet linked": between a producer's exchange and its link store, the node before
// it has no `next` yet although the queue is not empty. pop() then returns null rather than
// spin; nonempty() still says true (it looks at `back_`), so the scheduling handshake (cell.h)
// reschedules the cell and the consumer retries on its next turn. The window is two stores
// long unless the producer is preempted inside it.
//
// Counting without a shared counter per message: producers add each chain's length to
// `pushed_` (one more atomic per chain, on the line they write anyway), the consumer counts
// what it popped privately; their difference is the backlog. The high water is sampled, like
// the stack's refill did, whenever the consumer has popped everything it last knew about.
// Senders count into bounded mailboxes (`bounded_length`, so that kReject can refuse exactly),
// marking the envelopes they counted so that the consumer subtracts exactly those.
#pragma once

#include <atomic>
#include <cstdint>

#include "messaging/envelope.h"

namespace reheap::detail {

class Mailbox {
 public:
  // Any thread: appends `first`..`last`, `n` envelopes linked through `next`, in that order.
  void push(Envelope* first, Envelope* last, std::uint32_t n) noexcept {
    pushed_.fetch_add(n, std::memory_order_relaxed);
    append(first, last);
  }
  void push(Envelope* e) noexcept { push(e, e, 1); }

  // Consumer only: the oldest envelope, or null (empty, or its successor not linked yet).
  Envelope* pop() noexcept {
    if (popped_ >= known_) [[unlikely]] sample();
    Envelope* front = front_;
    Envelope* next = link(front).load(std::memory_order_acquire);
    if (front == &sentinel_) {
      if (next == nullptr) return nullptr;
      front_ = front = next;
      next = link(front).load(std::memory_order_acquire);
    }
    if (next == nullptr) [[unlikely]] {
      next = pop_last(front);
      if (next == nullptr) return nullptr;
    }
    front_ = next;
    ++popped_;
    return front;
  }

  // Consumer only: true if a pop would find something, or soon will (a producer between its
  // exchange and its link). seq_cst: one side of the scheduling handshake (cell.h).
  bool nonempty() const noexcept {
    return front_ != &sentinel_ || back_.load(std::memory_order_seq_cst) != &sentinel_;
  }

  // Consumer only: undoes a sender's count of `e` (see above), returning the count before.
  std::uint32_t uncount(const Envelope* e) noexcept {
    return e->counted ? bounded_length.fetch_sub(1, std::memory_order_relaxed) : 0;
  }

  // Consumer only: how many envelopes wait now.
  std::uint32_t waiting() const noexcept {
    return static_cast<std::uint32_t>(pushed_.load(std::memory_order_relaxed) - popped_);
  }
  std::uint32_t high_water() const noexcept { return high_water_; }
  void reset_high_water() noexcept { high_water_ = 0; }

 private:
  static std::atomic_ref<Envelope*> link(Envelope* e) noexcept {
    return std::atomic_ref<Envelope*>(e->next);
  }

  void append(Envelope* first, Envelope* last) noexcept {
    link(last).store(nullptr, std::memory_order_relaxed);
    Envelope* before = back_.exchange(last, std::memory_order_seq_cst);
    link(before).store(first, std::memory_order_release);
  }

  // `front` is linked to nothing: if it is the last node, put the sentinel behind it so that it can
  // be handed out. The successor of `front`, or null if a producer has not linked it yet.
  [[gnu::noinline]] Envelope* pop_last(Envelope* front) noexcept {
    if (back_.load(std::memory_order_acquire) != front) return nullptr;  // pushed, not linked
    append(&sentinel_, &sentinel_);
    return link(front).load(std::memory_order_acquire);
  }

  [[gnu::noinline]] void sample() noexcept {
    known_ = pushed_.load(std::memory_order_relaxed);
    const auto backlog = static_cast<std::uint32_t>(known_ - popped_);
    if (backlog > high_water_) high_water_ = backlog;
  }

  alignas(64) std::atomic<Envelope*> back_{&sentinel_};  // producers' line
  std::atomic<std::uint64_t> pushed_{0};

 public:
  std::atomic<std::uint32_t> bounded_length{0};  // see above

 private:
  alignas(64) Envelope* front_ = &sentinel_;  // consumer's line from here on
  std::uint64_t popped_ = 0;
  std::uint64_t known_ = 0;  // pushed_ when last sampled
  std::uint32_t high_water_ = 0;
  Envelope sentinel_{};
};

}  // namespace reheap::detail
