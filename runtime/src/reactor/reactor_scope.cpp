#include "reactor/reactor_scope.h"

namespace reheap::detail {
namespace {
constinit thread_local Cell* t_cell [[gnu::tls_model("initial-exec")]] = nullptr;  // see reactor_host.cpp
}

Cell* current_cell() noexcept { return t_cell; }

ReactorScope::ReactorScope(Cell* c) noexcept : heap_(c->heap.get()), previous_(t_cell) {
  t_cell = c;
}

ReactorScope::~ReactorScope() { t_cell = previous_; }

}  // namespace reheap::detail
