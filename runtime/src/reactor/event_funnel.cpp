// The event funnel (see event_funnel.h).
#include "reactor/event_funnel.h"

#include <new>

#include "reactor/host_slot.h"
#include "reactor/reactor_access.h"
#include "reactor/reactor_scope.h"
#include "recording/recorder.h"
#include "reheap/heap_scope.h"
#include "messaging/request_table.h"
#include "reactor/type_name.h"
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
void guarded(Cell* c, EventKind kind, Hook&& hook) {
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

}  // namespace

bool EventFunnel::deliver_message(Cell* c, const Message& message) {
  live_.begin(c);
  ReactorAccess::events(*c->reactor)++;
  guarded(c, EventKind::kMessage, [&] { detail::deliver_message(*c->reactor, message); });
  c->stats.events++;
  return !c->supervision.failed && c->state == CellState::kLive;
}

bool EventFunnel::deliver(Cell* c, const Event& event) {
  if (c->state != CellState::kLive || c->reactor == nullptr || c->supervision.failed) return false;
  live_.begin(c);
  ReactorHost* host = &live_;
  Recorder* recorder = c->recorder.get();
  if (recorder != nullptr) [[unlikely]] host = recorder->begin_event(event, live_);
  {
    ReactorScope scope(c);
    const HostSlotScope door(host, c->reactor);
    ReactorAccess::events(*c->reactor)++;
    guarded(c, event.kind, [&] {
      if (event.kind == EventKind::kMessage) [[likely]] {
        detail::deliver_message(*c->reactor, *event.message);  // deliver_to's most frequent case, inline
      } else {
        deliver_to(*c->reactor, event);
      }
    });
  }
  if (recorder != nullptr) [[unlikely]] recorder->end_event(c);
  c->stats.events++;
  return !c->supervision.failed && c->state == CellState::kLive;
}

}  // namespace reheap::detail
