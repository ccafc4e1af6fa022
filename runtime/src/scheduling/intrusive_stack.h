// The workers' run queues and command queues are intrusive stacks (mailboxes are Vyukov queues,
// mailbox.h): producers push with one CAS, the single consumer takes the whole stack with
// one exchange and reverses it into push order. Pushes are linearized by the CAS, so each taken
// batch is FIFO, and batches are taken in order.
#pragma once

#include <atomic>

namespace reheap::detail {

// Any thread. `Link` is the node's next-pointer member.
template <class Node, Node* Node::*Link>
inline void stack_push(std::atomic<Node*>& top, Node* node) noexcept {
  Node* old = top.load(std::memory_order_relaxed);
  do {
    node->*Link = old;
  } while (!top.compare_exchange_weak(old, node, std::memory_order_seq_cst,
                                      std::memory_order_relaxed));
}

// Consumer only: the whole stack in push order (null if empty); `*count` gets its length.
template <class Node, Node* Node::*Link>
inline Node* stack_take_fifo(std::atomic<Node*>& top, unsigned* count = nullptr) noexcept {
  Node* list = top.exchange(nullptr, std::memory_order_acquire);
  Node* fifo = nullptr;
  unsigned n = 0;
  while (list != nullptr) {
    Node* next = list->*Link;
    list->*Link = fifo;
    fifo = list;
    list = next;
    ++n;
  }
  if (count != nullptr) *count = n;
  return fifo;
}

}  // namespace reheap::detail
