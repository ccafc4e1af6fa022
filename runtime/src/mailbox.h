// Mailbox: a reactor's queue of envelopes. Many threads push, one (the reactor's worker) pops.
//
// Producers push onto a lock-free stack (one compare-and-swap); the consumer takes the whole
// stack at once and reverses it into its private FIFO list. Pushes are linearized by the CAS, so
// the reversed batch is in push order, and batches are taken in order: per-producer FIFO holds.
// A Vyukov queue would save the reversal but has a transient "not yet linked" state that the
// schedule/unschedule handshake (cell.h) would have to spin on; the stack has none.
//
// Counting without a shared counter per message: the consumer counts what it holds privately
// (and the high water, at each refill, when the whole backlog has just arrived); senders count
// only into bounded mailboxes (`bounded_length`, so that kReject can refuse exactly), marking the
// envelopes they counted so that the consumer subtracts exactly those. An unbounded mailbox thus
// costs one CAS per message and nothing else on the producers' cache line.
#pragma once

#include <atomic>
#include <cstdint>

#include "envelope.h"
#include "intrusive_stack.h"

namespace reheap::detail {

class Mailbox {
 public:
  // Any thread.
  void push(Envelope* e) noexcept { stack_push<Envelope, &Envelope::next>(top_, e); }

  // Consumer only: the oldest envelope, or null.
  Envelope* pop() noexcept {
    if (head_ == nullptr && !refill()) return nullptr;
    Envelope* e = head_;
    head_ = e->next;
    --held_;
    return e;
  }

  // Consumer only: true if a pop would find something (a push racing with this call may or may
  // not be seen; the scheduling handshake covers that case).
  bool nonempty() const noexcept {
    return head_ != nullptr || top_.load(std::memory_order_seq_cst) != nullptr;
  }

  // Consumer only: undoes a sender's count of `e` (see above), returning the count before.
  std::uint32_t uncount(const Envelope* e) noexcept {
    return e->counted ? bounded_length.fetch_sub(1, std::memory_order_relaxed) : 0;
  }

  // Consumer only (it alone frees envelopes, so walking the shared stack is safe): how many
  // envelopes wait now.
  std::uint32_t waiting() const noexcept {
    std::uint32_t n = held_;
    for (const Envelope* e = top_.load(std::memory_order_acquire); e != nullptr; e = e->next) ++n;
    return n;
  }
  std::uint32_t high_water() const noexcept { return high_water_; }
  void reset_high_water() noexcept { high_water_ = 0; }

 private:
  bool refill() noexcept {
    unsigned n = 0;
    head_ = stack_take_fifo<Envelope, &Envelope::next>(top_, &n);
    if (head_ == nullptr) return false;
    held_ = n;
    if (n > high_water_) high_water_ = n;
    return true;
  }

  alignas(64) std::atomic<Envelope*> top_{nullptr};  // producers' line

 public:
  std::atomic<std::uint32_t> bounded_length{0};  // see above

 private:
  alignas(64) Envelope* head_ = nullptr;             // consumer's line from here on
  std::uint32_t held_ = 0;                           // envelopes on the private list
  std::uint32_t high_water_ = 0;
};

}  // namespace reheap::detail
