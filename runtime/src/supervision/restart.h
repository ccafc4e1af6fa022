// Exact restarts of recorded reactors at their worker (replay/exact_restart.h holds the replay).
//
// A failure under kRestart (supervisor.cpp) starts one when the reactor is recorded; the replay
// then runs a slice at each of the reactor's turns (Worker::run_cell) until the reactor stands
// just before its failing event, and the restart is finished here: its timers re-armed as they
// were, the sockets the failing event opened closed, the socket events that came meanwhile
// delivered. Until then nothing else reaches the reactor (see exact_restart.h).
#pragma once

#include <string>

#include "reactor/cell.h"

namespace reheap::detail {

class Worker;

// Worker thread, right after c's failing event. Starts an exact restart and returns true, or
// returns false with `*why` when c cannot be restarted exactly (it is not recorded, or its
// recording stopped), leaving c as it was. Throws when the restore fails; c then has no heap,
// and the caller restarts it from its last snapshot.
bool begin_exact_restart(Worker& w, Cell* c, std::string* why);

// Worker thread, at c's turn while c->restart is set: runs a slice of the replay. Returns true
// once c->restart is done (finished, or given up: then c was restarted from its last snapshot, or
// is stopping), false when more remains for a later turn.
bool continue_restart(Worker& w, Cell* c);

// Worker thread: a socket event of c, which is restarting, kept for after the restart.
void defer_during_restart(Cell* c, const Event& event);

}  // namespace reheap::detail
