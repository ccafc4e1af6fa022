// MpscInbox: an intrusive, lock-free, multi-producer single-consumer inbox, the queue of the raw
// libuv bound (bench_rawuv.cpp).
//
// Data model: one atomic pointer to the most recently pushed node; every node links to the node
// pushed before it through its own `next` field, so the inbox is a stack of nodes the producers
// own until they push them and the consumer owns after it takes them. Nothing is allocated here.
//
//   push      (any thread)   links the node in front with one compare-and-swap. It returns true
//                            when the inbox was empty before: exactly then the consumer may be
//                            asleep, and the producer must wake it (uv_async_send). Pushes onto a
//                            non-empty inbox never wake anybody, so a burst costs one wake-up.
//   take_all  (the consumer) detaches the whole stack with one exchange and reverses it, which
//                            yields the nodes in the order they were pushed (FIFO overall, and so
//                            FIFO per producer). The consumer drains a batch per wake-up.
//
// No wake-up is lost: a push that finds the inbox empty is one that happened after the
// consumer's last take_all, so the consumer is told about it; a push that finds it non-empty
// lands in a batch the consumer has been (or will be) told about and has not taken yet.
//
// Alternative rejected: Vyukov's intrusive MPSC queue (exchange on the tail, FIFO without the
// reversal). Its pop sees a half-linked node while a producer is between its exchange and its
// link store, and knowing when the consumer needs a wake-up takes a second shared flag; the
// stack needs neither, and the reversal walks nodes the consumer is about to read anyway.
#pragma once

#include <atomic>

namespace rawuv {

// Node must have a public member `Node* next`.
template <class Node>
class MpscInbox {
 public:
  // Returns true if the inbox was empty, i.e. the consumer must be woken.
  bool push(Node* node) noexcept {
    Node* head = head_.load(std::memory_order_relaxed);
    do {
      node->next = head;
    } while (!head_.compare_exchange_weak(head, node, std::memory_order_release,
                                          std::memory_order_relaxed));
    return head == nullptr;
  }

  // Takes every node pushed so far, oldest first, linked through `next` and ending in nullptr.
  Node* take_all() noexcept {
    Node* node = head_.exchange(nullptr, std::memory_order_acquire);
    Node* oldest_first = nullptr;
    while (node != nullptr) {
      Node* const older = node->next;
      node->next = oldest_first;
      oldest_first = node;
      node = older;
    }
    return oldest_first;
  }

 private:
  // On a cache line of its own (alignas makes the whole inbox 64 bytes): producers and the
  // consumer write it, and nothing else may share the line.
  alignas(64) std::atomic<Node*> head_{nullptr};
};

}  // namespace rawuv
