// Supervision: what happens when a reactor's hook throws (policies in spawn_options.h).
#pragma once

#include "cell.h"

namespace reheap::detail {

class Worker;

// Worker thread, right after the failing hook (c->failure_* describe it): reports the failure
// and applies the reactor's policy, leaving c either restored in place (c->restored) or
// kStopping without on_stop.
void handle_failure(Worker& w, Cell* c);
// Worker thread, right after on_stop threw: reports it as handle_failure reports a failure (the
// reactor stops all the same; no policy applies).
void report_stop_failure(Worker& w, Cell* c);

}  // namespace reheap::detail
