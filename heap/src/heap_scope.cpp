#include "reheap/heap_scope.h"

#include "current.h"

namespace reheap {
namespace detail {

constinit HeapState g_no_heap{kNoHeapId};
constinit thread_local HeapState* t_current [[gnu::tls_model("initial-exec")]] = &g_no_heap;

}  // namespace detail

Heap* current_heap() noexcept {
  detail::HeapState* h = detail::t_current;
  return h == &detail::g_no_heap ? nullptr : h;
}

HeapScope::HeapScope(Heap* heap) noexcept : previous_(current_heap()) {
  detail::t_current = heap != nullptr ? detail::state(heap) : &detail::g_no_heap;
}

HeapScope::~HeapScope() {
  detail::t_current = previous_ != nullptr ? detail::state(previous_) : &detail::g_no_heap;
}

}  // namespace reheap
