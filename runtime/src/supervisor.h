// Supervision: what happens when a reactor's hook throws (policies in spawn_options.h).
#pragma once

#include "cell.h"

namespace reheap::detail {

class Worker;

// Worker thread, right after the failing hook (c->failure_* describe it): reports the failure
// and applies the reactor's policy, leaving c either restored in place (c->restored) or
// kStopping without on_stop.
void handle_failure(Worker& w, Cell* c);

}  // namespace reheap::detail
