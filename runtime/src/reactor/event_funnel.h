// EventFunnel: the one door through which every event reaches a reactor on a worker (event.h).
//
// deliver() makes the reactor's heap and host current, counts the event in the reactor's heap,
// calls the hook, turns what it throws into the cell's failure (supervision acts on it after the
// event, Worker::after_hook), keeps the statistics, and lets the reactor's recorder (if any) see
// the event and every answer its host gave. Messages, timers, sockets, start, restore and stop
// all come through here; nothing else calls a hook.
//
// A run of messages (MessageRun + deliver_message) is the fast path of a reactor's turn when
// nothing records it: its heap and host are made current once for the run rather than once per
// message (entering and leaving them were ~10% of a streaming receiver's time); every message
// still gets its own event: fresh time answers, the event count, the failure handling.
#pragma once

#include <typeinfo>

#include "reactor/cell.h"
#include "reactor/host_slot.h"
#include "reactor/live_host.h"
#include "reactor/reactor_scope.h"
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

  // Worker thread: while open, `c`'s heap and host are current. Only for a live, started,
  // unrecorded reactor that has not failed, and only around deliver_message.
  class MessageRun {
   public:
    MessageRun(EventFunnel& funnel, Cell* c) noexcept
        : scope_(c), door_(&funnel.live_, c->reactor) {}

   private:
    ReactorScope scope_;
    HostSlotScope door_;
  };

  // Worker thread, inside a MessageRun of `c`: what deliver() does for a message event. False
  // if the hook failed or stopped the reactor (the run must end before after_hook).
  bool deliver_message(Cell* c, const Message& message);

 private:
  LiveHost live_;
};

// What a hook threw, kept (in process memory) for Worker::after_hook. `thrown`: the exception's
// dynamic type, if it is a std::exception.
void record_failure(Cell* c, FailureKind kind, const char* what, const char* hook, const std::type_info* thrown);

}  // namespace reheap::detail
