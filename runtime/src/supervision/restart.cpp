// Exact restarts at the worker (see restart.h).
#include "supervision/restart.h"

#include <chrono>

#include "io/tcp.h"
#include "io/timer_service.h"
#include "reactor/reactor_access.h"
#include "recording/recorder.h"
#include "reheap/heap_scope.h"
#include "replay/exact_restart.h"
#include "runtime_impl.h"
#include "scheduling/worker.h"
#include "supervision/supervisor.h"

namespace reheap::detail {
namespace {

// How long a slice of a restart's replay runs before the worker's other reactors get their turn.
constexpr std::chrono::microseconds kRestartSlice{1000};

// The runtime's side of c, once its reactor stands just before the failing event again.
void finish(Worker& w, Cell* c) {
  Reactor& r = *c->reactor;
  // Ids at or past these were minted by the failing event, which the restored reactor never had.
  const TimerId timers_from = ReactorAccess::timer_counter(r);
  const SocketId sockets_from = ReactorAccess::socket_counter(r);
  std::vector<replay::ExactRestart::Deferred> deferred;
  {
    HeapScope system(nullptr);
    forget_timers_from(c, timers_from);
    for (const TimerState& t : c->restart->cancelled_timers()) {
      if (t.id < timers_from) add_parked_timer(c, t);
    }
    deferred = c->restart->take_deferred();
  }
  c->restart.reset();
  rearm_timers(w, c, ParkedTime::kKeepsRunning);
  drop_sockets_from(c, sockets_from);
  hold_listeners(c, false);
  w.settled(c);  // the failure's handling ends here (Worker::after_hook)
  for (replay::ExactRestart::Deferred& d : deferred) {
    const SocketId about = d.event.kind == EventKind::kAccept ? d.event.connection : d.event.socket;
    if (about >= sockets_from) continue;  // a socket the restored reactor does not know
    if (c->state != CellState::kLive || c->restart != nullptr) break;
    w.deliver_event(c, d.event);
  }
}

}  // namespace

bool begin_exact_restart(Worker& w, Cell* c, std::string* why) {
  if (c->recorder == nullptr) {
    *why = "it is not recorded";
    return false;
  }
  if (c->supervision.hook == hook_name(EventKind::kStart)) {
    *why = "on_start failed, and there is no state before it to come back to";
    return false;
  }
  std::optional<RestartSource> source = c->recorder->take_restart_source(c, why);
  if (!source) return false;
  // Nothing of the runtime may reach the reactor while its past is replayed: its timers wait
  // parked (their time runs on), its listeners stop accepting, and its other socket events are
  // kept (Worker::deliver_event).
  park_timers(w, c);
  hold_listeners(c, true);
  replay::ExactRestart* restart = nullptr;
  {
    HeapScope system(nullptr);
    restart = new replay::ExactRestart(c, std::move(*source), w.runtime().owner);
  }
  c->restart.reset(restart);
  return true;
}

bool continue_restart(Worker& w, Cell* c) {
  try {
    if (!c->restart->run(std::chrono::steady_clock::now() + kRestartSlice)) return false;
  } catch (const std::exception& e) {
    std::string why;
    {
      HeapScope system(nullptr);
      why = e.what();
    }
    c->restart.reset();  // its deferred events belong to sockets the fallback closes
    hold_listeners(c, false);
    restart_from_snapshot_instead(w, c, why);
    return true;
  }
  finish(w, c);
  return true;
}

void defer_during_restart(Cell* c, const Event& event) { c->restart->defer(event); }

}  // namespace reheap::detail
