// ReactorScope: "this thread is now running reactor X": X's heap is current (so its handlers
// allocate in it) and X's cell is what Reactor's operations act on.
#pragma once

#include "reactor/cell.h"
#include "reheap/heap_scope.h"

namespace reheap::detail {

class ReactorScope {
 public:
  explicit ReactorScope(Cell* c) noexcept;
  ~ReactorScope();
  ReactorScope(const ReactorScope&) = delete;
  ReactorScope& operator=(const ReactorScope&) = delete;

 private:
  HeapScope heap_;
  Cell* previous_;
};

}  // namespace reheap::detail
