// ReactorHost: what a reactor's operations act on. Internal: the runtime, its recorder and replay
// driver, and the test kit's deterministic runtime implement it; a program never does, and
// nothing here is a stable API (reactors reach it only through Reactor's operations).
//
// A Reactor's operations (send, start_timer, listen, now, random, spawn, ...) do nothing
// themselves: each calls the host of the event being delivered. On a worker the host is the
// runtime's (its mailboxes, libuv timers and sockets, clocks), wrapped by a recorder when the
// reactor is recorded; in a test it is a replay driver's or the deterministic test runtime's
// (reheap::testing), which answers from a recording or from a virtual clock. The host is chosen
// per event by whoever delivers it (HostScope), so a reactor's code cannot tell the difference
// and needs no test doubles.
//
// Every answer a host gives is an input of the reactor (the time, a seed, a SendResult, a socket
// id, an error): a recording host writes each down in order, a replaying one gives the recorded
// one back and checks that the reactor asked the same question (event.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "reheap/actor_ref.h"
#include "reheap/message.h"
#include "reheap/reactor.h"
#include "reheap/reactor_io.h"
#include "reheap/snapshot_request.h"
#include "reheap/spawn_options.h"

namespace reheap {

class Runtime;

class ReactorHost {
 public:
  virtual ~ReactorHost() = default;

  // Builds a child reactor in the heap current when it is called (see Reactor::spawn).
  using Construct = detail::ConstructReactor;

  // ---- answers ----
  // The time of the current event: read once per event on first use, then fixed for the event.
  virtual std::chrono::system_clock::time_point system_now() = 0;
  virtual std::chrono::steady_clock::time_point steady_now() = 0;
  // 128 bits of entropy for the reactor's random engine (Reactor::random), asked once per heap.
  virtual void seed(std::uint64_t out[2]) = 0;
  virtual ActorRef sender() = 0;  // of the message being handled
  virtual int worker() = 0;       // the worker running the reactor (-1 outside a runtime)
  // The runtime, for what has no host operation; a replay has none and throws std::logic_error.
  virtual Runtime& runtime() = 0;

  // ---- outputs ----
  // Takes the envelope (sent or freed).
  virtual SendResult send(ActorRef to, detail::Envelope* envelope) = 0;
  virtual ActorRef spawn(const SpawnOptions& options, Construct construct, void* arguments) = 0;
  virtual void stop() = 0;
  virtual void request_snapshot(SnapshotRequestId id, ActorRef target, const std::filesystem::path& file,
                                SnapshotKind kind) = 0;
  virtual void start_timer(TimerId id, std::chrono::nanoseconds delay, std::chrono::nanoseconds period) = 0;
  virtual void cancel_timer(TimerId id) = 0;
  virtual SocketId listen(const std::string& host, std::uint16_t port, bool reuse_port, int backlog) = 0;
  virtual std::uint16_t local_port(SocketId socket) = 0;
  virtual SocketId connect(const std::string& host, std::uint16_t port) = 0;
  virtual WriteResult write(SocketId socket, std::span<const char> data) = 0;
  virtual void close(SocketId socket) = 0;
  virtual void set_no_delay(SocketId socket, bool on) = 0;
  virtual void set_reading(SocketId socket, bool on) = 0;
  virtual void set_write_high_water(SocketId socket, std::size_t bytes) = 0;

  // ---- statistics the base class's default handlers keep ----
  // A message no handler took; the runtime's host also reports its type once per reactor type.
  virtual void count_unhandled(const Reactor& /*reactor*/, const Message& /*message*/) noexcept {}
  virtual void count_decode_error() noexcept {}
  // A reply whose request was no longer pending, dropped (request.h).
  virtual void count_late_reply() noexcept {}
};

// "This thread now delivers an event to `reactor` through `host`": its operations go to `host`.
// The caller makes the reactor's heap current too (HeapScope). Nests.
class HostScope {
 public:
  HostScope(ReactorHost* host, const Reactor* reactor) noexcept;
  ~HostScope();
  HostScope(const HostScope&) = delete;
  HostScope& operator=(const HostScope&) = delete;

  // The host of the event being delivered to `reactor` on this thread, or null.
  static ReactorHost* of(const Reactor* reactor) noexcept;

 private:
  ReactorHost* previous_host_;
  const Reactor* previous_reactor_;
};

}  // namespace reheap
