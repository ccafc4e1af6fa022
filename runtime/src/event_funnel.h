// EventFunnel: the one door through which every event reaches a reactor on a worker (event.h).
//
// deliver() makes the reactor's heap and host current, counts the event in the reactor's heap,
// calls the hook, turns what it throws into the cell's failure (supervision acts on it after the
// event, Worker::after_hook), keeps the statistics, and lets the reactor's recorder (if any) see
// the event and every answer its host gave. Messages, timers, sockets, start, restore and stop
// all come through here; nothing else calls a hook.
#pragma once

#include "cell.h"
#include "live_host.h"
#include "reheap/event.h"

namespace reheap::detail {

class Worker;

class EventFunnel {
 public:
  explicit EventFunnel(Worker& worker) noexcept : live_(worker) {}
  EventFunnel(const EventFunnel&) = delete;
  EventFunnel& operator=(const EventFunnel&) = delete;

  // Worker thread. False, with nothing delivered, if the cell has no live reactor or already
  // failed during this event; else false if the hook failed or stopped the reactor.
  bool deliver(Cell* c, const Event& event);

 private:
  LiveHost live_;
};

// What a hook threw, kept (in process memory) for Worker::after_hook.
void record_failure(Cell* c, FailureKind kind, const char* what, const char* hook);

}  // namespace reheap::detail
