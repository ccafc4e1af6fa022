// The asker's side of request/reply (reheap/request.h): matching a reply or a timer to a pending
// request, and failing the pending requests of a restored reactor. Called from the one door every
// event passes (deliver_to, EventFunnel), so that a reactor's own on_message, on_timer and
// on_restored never see the runtime's part of an exchange.
#pragma once

#include "messaging/envelope.h"
#include "reheap/reactor.h"

namespace reheap::detail {

// A reply goes to its request's continuation, or is dropped and counted when none is pending.
void deliver_reply(Reactor& reactor, const Message& reply);
// A timer that is a pending request's timeout (or the prompt timer of a refusal) runs its
// continuation and returns true; any other timer is the reactor's own: false.
bool deliver_request_timer(Reactor& reactor, TimerId timer);
// Before on_restored: the requests pending in the snapshot are failed with kRestored.
void fail_requests_on_restore(Reactor& reactor);

// The message being handled on this thread and its reactor, for Reactor::reply and
// reply_address, which typed handlers call without the Message at hand.
struct CurrentMessage {
  const Reactor* reactor = nullptr;
  const Message* message = nullptr;
};
extern constinit thread_local CurrentMessage t_current_message [[gnu::tls_model("initial-exec")]];

// Sets t_current_message for a handler's call, and puts the outer one back, also when the
// handler throws.
class CurrentMessageScope {
 public:
  CurrentMessageScope(const Reactor& reactor, const Message& message) noexcept
      : previous_(t_current_message) {
    t_current_message = CurrentMessage{&reactor, &message};
  }
  ~CurrentMessageScope() { t_current_message = previous_; }
  CurrentMessageScope(const CurrentMessageScope&) = delete;
  CurrentMessageScope& operator=(const CurrentMessageScope&) = delete;

 private:
  CurrentMessage previous_;
};

// A message event: a reply takes the runtime's path, anything else goes to on_message.
inline void deliver_message(Reactor& reactor, const Message& message) {
  if (MessageAccess::envelope(message).exchange == kReplyMessage) [[unlikely]] {
    deliver_reply(reactor, message);
    return;
  }
  const CurrentMessageScope current(reactor, message);
  reactor.on_message(message);
}

}  // namespace reheap::detail
