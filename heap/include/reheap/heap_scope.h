// The current heap: which heap plain `new` allocates from on this thread.
//
// Each thread has one current heap (none at start, meaning the system allocator). HeapScope makes
// a heap current for its lifetime and restores the previous one, so scopes nest. With the
// reheap::global_new library linked, every global operator new form allocates from the current
// heap, and every operator delete form routes the block by its address: to its heap if the
// address is in the zone, to the system allocator otherwise.
//
// Rules a program must keep (checked builds abort with a message when they are broken):
//   - a block of heap H is deleted only while H is current on the deleting thread;
//   - H is used by one thread at a time;
//   - objects that live in H are destroyed before H is (or abandoned: destroying H frees them).
//
// Lifetime trap avoided: the current-heap slot is a constant-initialized, trivially destructible
// thread_local, and the zone is never unmapped, so neither has a construction or destruction
// order to get wrong; `delete` works during static and thread-local destruction.
#pragma once

#include "reheap/heap.h"

namespace reheap {

// The current heap of this thread, or null for the system allocator.
Heap* current_heap() noexcept;

class HeapScope {
 public:
  // `heap` may be null: the scope then selects the system allocator.
  explicit HeapScope(Heap* heap) noexcept;
  explicit HeapScope(Heap& heap) noexcept : HeapScope(&heap) {}
  ~HeapScope();

  HeapScope(const HeapScope&) = delete;
  HeapScope& operator=(const HeapScope&) = delete;

 private:
  Heap* previous_;
};

}  // namespace reheap
