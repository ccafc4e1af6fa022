// Event: one input of a reactor, as a value.
//
// Everything that reaches a reactor reaches it as an Event through one door: the runtime's event
// funnel (runtime/src/reactor/event_funnel.h) on a worker, or a replay driver (reheap::testing) on a
// test's thread. The door makes the reactor's heap current, calls the hook the event's kind
// names (deliver_to below), and is the one place where recording, replay, statistics and
// failure handling hook in. Outputs (sends, timers, sockets, spawns) leave through the host
// of the event (the runtime's, a recorder's or a replay's; internal), and what it answers to them
// (a SendResult, a socket id, the time, a random seed) comes back through it: with the events, those answers are every input a reactor
// has, so a reactor given its heap and the same inputs does the same thing (DETERMINISM.md).
#pragma once

#include <cstdint>
#include <span>
#include <system_error>

#include "reheap/actor_ref.h"
#include "reheap/message.h"
#include "reheap/reactor_io.h"

namespace reheap {

class Reactor;

// The numbers are part of the recording format (RECORDING_FORMAT.md): never renumber.
enum class EventKind : std::uint8_t {
  kStart = 1,     // on_start
  kRestored = 2,  // on_restored
  kMessage = 3,   // on_message(message)
  kTimer = 4,     // on_timer(timer)
  kAccept = 5,    // on_accept(socket = the listener, connection)
  kConnect = 6,   // on_connect(socket, error)
  kData = 7,      // on_data(socket, data)
  kClosed = 8,    // on_closed(socket, error)
  kStop = 9,      // on_stop
  kEnd = 10,      // on_end(socket): the peer sent everything (it half-closed or closed)
  kDrained = 11,  // on_drained(socket): the write queue that crossed its high-water mark is empty
  kAcceptError = 12,  // on_accept_error(socket = the listener, error): accepting failed (EMFILE)
};

struct Event {
  EventKind kind = EventKind::kStart;
  const Message* message = nullptr;  // kMessage (its sender is message->sender())
  TimerId timer = 0;                 // kTimer
  SocketId socket = 0;               // kAccept and kAcceptError (the listener), and TCP kinds
  SocketId connection = 0;           // kAccept
  std::span<const char> data{};      // kData: valid during the call
  std::error_code error{};           // kConnect, kClosed, kAcceptError
};

// The hook's name, for failure reports ("on_message", ...).
const char* hook_name(EventKind kind) noexcept;

// Calls the hook `event` names on `reactor`, nothing else: no heap is made current, nothing is
// caught. The door around it is the caller's (the funnel, a replay driver).
void deliver_to(Reactor& reactor, const Event& event);

}  // namespace reheap
