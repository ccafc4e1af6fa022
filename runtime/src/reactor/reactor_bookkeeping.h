// ReactorBookkeeping: what the runtime keeps for a reactor inside the reactor itself.
//
// A reactor lives in its heap and is snapshotted with it, so whatever the runtime must find again
// after a restore (the reactor's id counters, its random engine, its recording, the timers and
// sockets it had) lies in the Reactor object: in Reactor::state_, bytes of the size of this type,
// built and destroyed with the reactor (reactor.cpp) and reached only through ReactorAccess
// (reactor_access.h). Keeping it there rather than behind a pointer costs the hot path nothing:
// a field of it is an offset from the reactor, as a field of Reactor would be. Everything here
// must keep meaning across processes: numbers and vectors in the reactor's heap, no pointers out.
#pragma once

#include <cstdint>
#include <vector>

#include "reheap/message.h"
#include "reheap/reactor.h"
#include "reheap/request.h"

namespace reheap::detail {

// Written into every Reactor at construction; a restored root that lacks it is not a reactor.
inline constexpr std::uint64_t kReactorMagic = 0x5245414354524852ull;  // "RHRTCAER"

// One pending request, in the asker's heap.
struct PendingRequest {
  RequestId id;
  std::uint64_t reply_type;  // message_type_id<Reply>
  TimerId timer;             // the timeout, or the prompt timer that delivers `failed`
  Continuation then;
  RequestError failed;       // kNone while waiting for the reply; else delivered when `timer` fires
  SendResult refusal;
};

// The asker's table of pending requests (in the reactor's bookkeeping, so in its heap). Linear in the
// number of pending requests per reply and per timer event: requests are expected to be few per
// reactor at a time (hundreds, not millions).
struct PendingRequests {
  std::vector<PendingRequest> pending;
  std::uint64_t next = 0;  // the counter under the epoch (high 32 bits); 0: no request yet
};

struct ReactorBookkeeping {
  // A handler registered with Reactor::handle<&R::fn>().
  struct Handler {
    std::uint64_t type_id;
    void (*thunk)(Reactor&, const Message&);
  };
  // A timer as the runtime writes it down just before a snapshot, to re-arm after a restore.
  struct SavedTimer {
    TimerId id;
    std::int64_t due_in_ns;
    std::int64_t period_ns;
  };

  // First, at the offset the check word always had, so that a snapshot's bytes are checked the
  // same way (read_saved_reactor).
  std::uint64_t magic = kReactorMagic;
  std::vector<Handler> handlers;
  TimerId next_timer = 1;
  SocketId next_socket = 1;
  SnapshotRequestId next_snapshot_request = 1;
  std::uint64_t events = 0;           // events delivered (the funnel counts them)
  std::uint64_t random[2] = {0, 0};   // xoroshiro128++; {0, 0}: not seeded yet
  std::uint64_t recording_id = 0;     // of the recording this reactor is part of, 0 if none
  std::vector<SavedTimer> saved_timers;
  std::vector<SocketId> saved_sockets;
  PendingRequests requests;  // the requests this reactor asked and waits for (request.h)
};

}  // namespace reheap::detail
