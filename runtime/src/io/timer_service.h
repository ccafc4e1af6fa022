// Timers of reactors: one uv_timer_t per started timer, owned by the cell's worker loop.
//
// A reactor names its timers by TimerId (a counter in its heap, so ids stay unique across a
// restore). Moving a reactor parks its timers (remembering how long each had left) and re-arms
// them on the new worker's loop; a snapshot records the same thing in the reactor's heap, and a
// restore re-arms from there. libuv timers have millisecond resolution: delays round up, and
// a timer never fires before its delay has passed (see arm() in timer_service.cpp).
#pragma once

#include <chrono>
#include <optional>

#include "io/timer_state.h"
#include "reactor/cell.h"

namespace reheap::detail {

class Worker;

void start_timer(Worker& w, Cell* c, TimerId id, std::chrono::nanoseconds delay,
                 std::chrono::nanoseconds period);
void cancel_timer(Worker& w, Cell* c, TimerId id);
void close_timers(Worker& w, Cell* c);  // stops and frees all (teardown)
void park_timers(Worker& w, Cell* c);   // before a move or a checkpoint: stop, remember when due
// After a move (kKeepsRunning: a timer due during the move fires at once), or after a
// whole-process checkpoint (kStoodStill: each timer keeps the delay it had left when parked, as a
// restored process's monotonic clock is another one).
enum class ParkedTime { kKeepsRunning, kStoodStill };
void rearm_timers(Worker& w, Cell* c, ParkedTime time = ParkedTime::kKeepsRunning);
// Snapshot support: the reactor's live timers as (id, left, period), into its heap.
void record_timers(Cell* c);
// After a restore: start the timers recorded in the reactor's heap.
void restart_recorded_timers(Worker& w, Cell* c);
// Exact restarts (replay/exact_restart.h): a live timer as it stands (nullopt: none with that
// id), and a timer put back as it stood, parked (rearm_timers arms it).
std::optional<TimerState> timer_state(const Cell* c, TimerId id);
void add_parked_timer(Cell* c, const TimerState& timer);
// Stops and frees the timers whose ids are `first` or later.
void forget_timers_from(Cell* c, TimerId first);

}  // namespace reheap::detail
