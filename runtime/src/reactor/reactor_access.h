// ReactorAccess: the runtime's door to the fields Reactor keeps in its heap for the runtime (its
// reference, id counters, and the timers and sockets recorded at snapshot time).
#pragma once

#include <cstddef>
#include <cstdint>

#include <new>
#include <vector>

#include "reactor/reactor_bookkeeping.h"
#include "reheap/heap.h"
#include "reheap/reactor.h"

namespace reheap::detail {

// Throws the std::logic_error of a Reactor operation called outside the reactor's hooks.
[[noreturn, gnu::noinline, gnu::cold]] void throw_outside_hooks(const char* operation);

struct ReactorAccess {
  using SavedTimer = ReactorBookkeeping::SavedTimer;
  using Handler = ReactorBookkeeping::Handler;
  static_assert(sizeof(ReactorBookkeeping) == Reactor::kStateBytes &&
                    alignof(ReactorBookkeeping) <= alignof(std::uint64_t),
                "Reactor::state_ must be sized and aligned for ReactorBookkeeping");

  static ReactorBookkeeping& book(Reactor& r) noexcept {
    return *std::launder(reinterpret_cast<ReactorBookkeeping*>(r.state_));
  }
  static const ReactorBookkeeping& book(const Reactor& r) noexcept {
    return *std::launder(reinterpret_cast<const ReactorBookkeeping*>(r.state_));
  }
  static std::uint64_t& magic(Reactor& r) noexcept { return book(r).magic; }
  static std::uint64_t& events(Reactor& r) noexcept { return book(r).events; }
  static std::uint64_t& recording_id(Reactor& r) noexcept { return book(r).recording_id; }
  static ActorRef& self(Reactor& r) noexcept { return r.self_; }
  static TimerId next_timer(Reactor& r) noexcept { return book(r).next_timer++; }
  // The id the reactor's next timer will get: timers with this id or later are not its yet.
  static TimerId timer_counter(const Reactor& r) noexcept { return book(r).next_timer; }
  static SocketId next_socket(Reactor& r) noexcept { return book(r).next_socket++; }
  // A replay sets the counter from the recorded socket ids rather than minting them.
  static SocketId& socket_counter(Reactor& r) noexcept { return book(r).next_socket; }
  static std::vector<SavedTimer>& saved_timers(Reactor& r) noexcept { return book(r).saved_timers; }
  static std::vector<SocketId>& saved_sockets(Reactor& r) noexcept { return book(r).saved_sockets; }
  static const std::vector<Handler>& handlers(const Reactor& r) noexcept { return book(r).handlers; }
  static PendingRequests& requests(Reactor& r) noexcept { return book(r).requests; }
  static RequestId request(Reactor& r, ActorRef to, Envelope* e, SendResult encoded,
                           std::uint64_t reply_type, std::chrono::nanoseconds timeout,
                           Continuation then) {
    return r.request_erased(to, e, encoded, reply_type, timeout, then);
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
