// Supervision: what happens when a reactor's hook throws (policies in spawn_options.h).
#pragma once

#include <string>

#include "reactor/cell.h"

namespace reheap::detail {

class Worker;

// Worker thread, right after the failing hook (c->failure_* describe it): reports the failure
// and applies the reactor's policy, leaving c either restarting exactly (c->restart: a recorded
// reactor, restart.h), restored in place from its last snapshot (c->restored), or kStopping
// without on_stop.
void handle_failure(Worker& w, Cell* c);
// Worker thread: c's exact restart (restart.h) could not go on (`why`): restarts c from its last
// snapshot instead (its restore hooks are the caller's to run), or stops it, reporting either.
void restart_from_snapshot_instead(Worker& w, Cell* c, const std::string& why);
// Worker thread, right after on_stop threw: reports it as handle_failure reports a failure (the
// reactor stops all the same; no policy applies).
void report_stop_failure(Worker& w, Cell* c);

}  // namespace reheap::detail
