// Event: hook names, and the one switch from an event to its hook (see event.h).
#include "reheap/event.h"

#include "messaging/request_table.h"
#include "reheap/reactor.h"

namespace reheap {

const char* hook_name(EventKind kind) noexcept {
  switch (kind) {
    case EventKind::kStart: return "on_start";
    case EventKind::kRestored: return "on_restored";
    case EventKind::kMessage: return "on_message";
    case EventKind::kTimer: return "on_timer";
    case EventKind::kAccept: return "on_accept";
    case EventKind::kConnect: return "on_connect";
    case EventKind::kData: return "on_data";
    case EventKind::kClosed: return "on_closed";
    case EventKind::kStop: return "on_stop";
    case EventKind::kEnd: return "on_end";
    case EventKind::kDrained: return "on_drained";
    case EventKind::kAcceptError: return "on_accept_error";
  }
  return "an unknown hook";
}

void deliver_to(Reactor& reactor, const Event& event) {
  switch (event.kind) {
    case EventKind::kStart: reactor.on_start(); return;
    case EventKind::kRestored:
      detail::fail_requests_on_restore(reactor);
      reactor.on_restored();
      return;
    case EventKind::kMessage: detail::deliver_message(reactor, *event.message); return;
    case EventKind::kTimer:
      if (!detail::deliver_request_timer(reactor, event.timer)) reactor.on_timer(event.timer);
      return;
    case EventKind::kAccept: reactor.on_accept(event.socket, event.connection); return;
    case EventKind::kConnect: reactor.on_connect(event.socket, event.error); return;
    case EventKind::kData: reactor.on_data(event.socket, event.data); return;
    case EventKind::kClosed: reactor.on_closed(event.socket, event.error); return;
    case EventKind::kStop: reactor.on_stop(); return;
    case EventKind::kEnd: reactor.on_end(event.socket); return;
    case EventKind::kDrained: reactor.on_drained(event.socket); return;
    case EventKind::kAcceptError: reactor.on_accept_error(event.socket, event.error); return;
  }
}

}  // namespace reheap
