// Mailbox: a reactor's queue of envelopes. Many threads push, one (the reactor's worker) pops.
//
// Producers push onto a lock-free stack (one compare-and-swap); the consumer takes the whole
// stack at once and reverses it into its private FIFO list. Pushes are linearized by the CAS, so
// the reversed batch is in push order, and batches are taken in order: per-producer FIFO holds.
// A Vyukov queue would save the reversal but has a transient "not yet linked" state that the
// schedule/unschedule handshake (cell.h) would have to spin on; the stack has none.
//
// `length` counts pushed and not yet popped envelopes: senders add before pushing (so a bounded
// mailbox can refuse exactly), the consumer subtracts after popping.
#pragma once

#include <atomic>
#include <cstdint>

#include "envelope.h"

namespace reheap::detail {

class Mailbox {
 public:
  // Any thread.
  void push(Envelope* e) noexcept {
    Envelope* top = top_.load(std::memory_order_relaxed);
    do {
      e->next = top;
    } while (!top_.compare_exchange_weak(top, e, std::memory_order_seq_cst,
                                         std::memory_order_relaxed));
  }

  // Consumer only: the oldest envelope, or null.
  Envelope* pop() noexcept {
    if (head_ == nullptr && !refill()) return nullptr;
    Envelope* e = head_;
    head_ = e->next;
    return e;
  }

  // Consumer only: true if a pop would find something (a push racing with this call may or may
  // not be seen; the scheduling handshake covers that case).
  bool nonempty() const noexcept {
    return head_ != nullptr || top_.load(std::memory_order_seq_cst) != nullptr;
  }

  std::atomic<std::uint32_t> length{0};

 private:
  bool refill() noexcept {
    Envelope* list = top_.exchange(nullptr, std::memory_order_acquire);
    if (list == nullptr) return false;
    Envelope* reversed = nullptr;
    while (list != nullptr) {
      Envelope* next = list->next;
      list->next = reversed;
      reversed = list;
      list = next;
    }
    head_ = reversed;
    return true;
  }

  std::atomic<Envelope*> top_{nullptr};
  alignas(64) Envelope* head_ = nullptr;  // consumer's private FIFO, away from the producers' line
};

}  // namespace reheap::detail
