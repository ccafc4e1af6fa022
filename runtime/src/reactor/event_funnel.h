// EventFunnel: the one door through which every event reaches a reactor on a worker (event.h).
//
// deliver() makes the reactor's heap and host current, counts the event in the reactor's heap,
// calls the hook, turns what it throws into the cell's failure (supervision acts on it after the
// event, Worker::after_hook), keeps the statistics, and lets the reactor's recorder (if any) see
// the event and every answer its host gave. Messages, timers, sockets, start, restore and stop
// all come through here; nothing else calls a hook.
//
// A reactor that nothing records stays entered (its heap and host current) from one event to the
// next until the worker calls leave(), so that a run of its messages enters it once rather than
// once per message (entering and leaving were ~10% of a streaming receiver's time); every message
// still gets its own event: fresh time answers, the event count, the failure handling. A recorded
// reactor is entered and left around each event, because its recorder runs outside its heap.
#pragma once

#include <optional>
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

  ~EventFunnel() { leave(); }

  // Worker thread. False, with nothing delivered, if the cell has no live reactor or already
  // failed during this event; else false if the hook failed or stopped the reactor (it is left
  // then). The reactor may stay entered afterwards: the caller leaves before anything but another
  // event of the same reactor runs (supervision, a system message, another cell, the loop).
  bool deliver(Cell* c, const Event& event) {
    // Entered means live, unrecorded and not failed (deliver leaves it otherwise), so the next
    // event of a run of messages needs none of the checks: the common case, inline.
    if (entered_ == c) [[likely]] return deliver_entered(c, event);
    return deliver_entering(c, event);
  }

  // Worker thread: whatever reactor is entered is left; the system heap is current again.
  void leave() noexcept {
    if (entered_ != nullptr) [[unlikely]] leave_entered();
  }

 private:
  bool deliver_entered(Cell* c, const Event& event);
  bool deliver_entering(Cell* c, const Event& event);
  void enter(Cell* c, ReactorHost* host) noexcept;
  void leave_entered() noexcept;

  LiveHost live_;
  Cell* entered_ = nullptr;  // the reactor whose heap and host are current, if any
  std::optional<ReactorScope> scope_;
  std::optional<HostSlotScope> door_;
};

// What a hook threw, kept (in process memory) for Worker::after_hook. `thrown`: the exception's
// dynamic type, if it is a std::exception.
void record_failure(Cell* c, FailureKind kind, const char* what, const char* hook, const std::type_info* thrown);

}  // namespace reheap::detail
