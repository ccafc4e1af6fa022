// ReactorAccess: the runtime's door to the fields Reactor keeps in its heap for the runtime (its
// reference, id counters, and the timers and sockets recorded at snapshot time).
#pragma once

#include <cstddef>
#include <cstdint>

#include "reheap/heap.h"
#include "reheap/reactor.h"

namespace reheap::detail {

// Written into every Reactor at construction; a restored root that lacks it is not a reactor.
inline constexpr std::uint64_t kReactorMagic = 0x5245414354524852ull;  // "RHRTCAER"

struct ReactorAccess {
  using SavedTimer = Reactor::SavedTimer;
  static std::uint64_t& magic(Reactor& r) noexcept { return r.magic_; }
  static std::uint64_t& events(Reactor& r) noexcept { return r.events_; }
  static std::uint64_t& recording_id(Reactor& r) noexcept { return r.recording_id_; }
  static ActorRef& self(Reactor& r) noexcept { return r.self_; }
  static TimerId next_timer(Reactor& r) noexcept { return r.next_timer_++; }
  // The id the reactor's next timer will get: timers with this id or later are not its yet.
  static TimerId timer_counter(const Reactor& r) noexcept { return r.next_timer_; }
  static SocketId next_socket(Reactor& r) noexcept { return r.next_socket_++; }
  // A replay sets the counter from the recorded socket ids rather than minting them.
  static SocketId& socket_counter(Reactor& r) noexcept { return r.next_socket_; }
  static std::vector<Reactor::SavedTimer>& saved_timers(Reactor& r) noexcept {
    return r.saved_timers_;
  }
  static std::vector<SocketId>& saved_sockets(Reactor& r) noexcept { return r.saved_sockets_; }
  static PendingRequests& requests(Reactor& r) noexcept { return r.requests_; }
  static RequestId request(Reactor& r, ActorRef to, Envelope* e, SendResult encoded,
                           std::uint64_t reply_type, std::chrono::nanoseconds timeout,
                           Continuation then) {
    return r.request_erased(to, e, encoded, reply_type, timeout, then);
  }
  static const std::vector<Reactor::Handler>& handlers(const Reactor& r) noexcept {
    return r.handlers_;
  }
  // Where magic, self, events and recording_id lie in a Reactor, to read them from a snapshot's
  // bytes without restoring it (read_saved_reactor in reactor_snapshot.h).
  struct Offsets {
    std::size_t magic, self, events, recording_id;
  };
  static Offsets offsets() noexcept;
};

// Returns if `heap` holds `reactor`. Otherwise the spawn built it outside its heap, as a program
// without reheap::global_new does: deletes the reactor, drops the heap and throws
// std::logic_error naming `who`.
void require_reactor_in_heap(HeapPtr& heap, Reactor* reactor, const char* who);

}  // namespace reheap::detail
