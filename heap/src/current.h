// The thread's current heap. Constant-initialized and trivially destructible: it can be read at
// any point of a thread's or the process's life, including during static destruction.
#pragma once

#include "heap_state.h"

namespace reheap::detail {

// Initial-exec: the library is built position-independent, where the default TLS model makes
// every read a __tls_get_addr call, and operator new and delete then keep their argument in a
// callee-saved register around it (a push and a pop on every call, even after the linker
// relaxes the call away). The library is linked into executables, whose static TLS block has
// room (the runtime's slots do the same: host_slot.h).
extern constinit thread_local HeapState* t_current [[gnu::tls_model("initial-exec")]];

}  // namespace reheap::detail
