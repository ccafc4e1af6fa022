// The event funnel (see event_funnel.h).
#include "reactor/event_funnel.h"

#include <new>

#include "messaging/request_table.h"
#include "reactor/host_slot.h"
#include "reactor/reactor_access.h"
#include "reactor/reactor_scope.h"
#include "reactor/type_name.h"
#include "recording/recorder.h"
#include "reheap/heap_scope.h"
#include "scheduling/worker.h"

namespace reheap::detail {

void record_failure(Cell* c, FailureKind kind, const char* what, const char* hook, const std::type_info* thrown) {
  HeapScope system(nullptr);
  c->supervision.failed = true;
  // Before the event's message is counted consumed: wait_idle waits for the failure's handling.
  if (Worker* w = Worker::current()) w->count_settling(c);
  c->supervision.kind = kind;
  c->supervision.what = what;
  c->supervision.hook = hook;
  if (thrown != nullptr) {
    c->supervision.exception_type = type_name(*thrown);
  } else {
    c->supervision.exception_type.clear();
  }
  if (c->reactor != nullptr) c->supervision.reactor_type = type_name(typeid(*c->reactor));
}

namespace {

// Calls `hook`, turning what it throws into the cell's failure.
template <class Hook>
[[gnu::always_inline]] inline void guarded(Cell* c, EventKind kind, Hook&& hook) {
  try {
    hook();
  } catch (const std::bad_alloc& e) {
    record_failure(c, FailureKind::kOutOfMemory, e.what(), hook_name(kind), &typeid(e));
  } catch (const std::exception& e) {
    record_failure(c, FailureKind::kException, e.what(), hook_name(kind), &typeid(e));
  } catch (...) {
    record_failure(c, FailureKind::kException, "an exception not derived from std::exception",
                   hook_name(kind), nullptr);
  }
}

// The hook of `event`, with the reactor entered: the event counted in its heap, what it throws
// turned into the cell's failure.
[[gnu::always_inline]] inline void run_hook(Cell* c, const Event& event) {
  ReactorAccess::events(*c->reactor)++;
  guarded(c, event.kind, [&] {
    if (event.kind == EventKind::kMessage) [[likely]] {
      detail::deliver_message(*c->reactor, *event.message);  // deliver_to's most frequent case, inline
    } else {
      deliver_to(*c->reactor, event);
    }
  });
}

}  // namespace

void EventFunnel::enter(Cell* c, ReactorHost* host) noexcept {
  leave();
  scope_.emplace(c);
  door_.emplace(host, c->reactor);
  entered_ = c;
}

void EventFunnel::leave_entered() noexcept {
  door_.reset();
  scope_.reset();
  entered_ = nullptr;
}

bool EventFunnel::deliver_entered(Cell* c, const Event& event) {
  live_.begin(c);
  run_hook(c, event);
  c->stats.events++;
  if (!c->supervision.failed && c->state == CellState::kLive) [[likely]] return true;
  leave_entered();
  return false;
}

bool EventFunnel::deliver_entering(Cell* c, const Event& event) {
  if (c->state != CellState::kLive || c->reactor == nullptr || c->supervision.failed) return false;
  Recorder* recorder = c->recorder.get();
  if (recorder == nullptr) [[likely]] {
    enter(c, &live_);
    return deliver_entered(c, event);
  }
  // A recorded reactor: its recorder runs outside its heap, before and after the hook, and the
  // hook's operations go to the host the recorder returns.
  leave();
  live_.begin(c);
  enter(c, recorder->begin_event(event, live_));
  run_hook(c, event);
  leave();
  recorder->end_event(c);
  c->stats.events++;
  return !c->supervision.failed && c->state == CellState::kLive;
}

}  // namespace reheap::detail
