// The thread's current heap. Constant-initialized and trivially destructible: it can be read at
// any point of a thread's or the process's life, including during static destruction.
#pragma once

#include "heap_state.h"

namespace reheap::detail {

extern constinit thread_local HeapState* t_current;

}  // namespace reheap::detail
