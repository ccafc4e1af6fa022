// Reactor: the base class's operations, each forwarding to the host of the event being delivered
// (reactor_host.h), and its random engine.
#include "reheap/reactor.h"

#include <bit>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>

#include "messaging/envelope.h"
#include "reactor/host_slot.h"
#include "reactor/reactor_access.h"
#include "reheap/heap_scope.h"

namespace reheap {

using detail::ReactorAccess;

Reactor::Reactor() { new (state_) detail::ReactorBookkeeping(); }

Reactor::~Reactor() { ReactorAccess::book(*this).~ReactorBookkeeping(); }

// require_current's slow path, kept out of it: building the message needs a frame and saved
// registers, which every send would pay for if they were in one function.
void detail::throw_outside_hooks(const char* operation) {
  HeapScope system(nullptr);
  throw std::logic_error(std::string("reheap::Reactor::") + operation +
                         ": called outside this reactor's hooks (operations are valid only "
                         "while one of its hooks runs, on the thread delivering it)");
}

namespace {

// The host of the event being delivered to `reactor` on this thread; throws outside its hooks.
[[gnu::always_inline]] inline ReactorHost& require_current(const Reactor* reactor, const char* operation) {
  ReactorHost* host = detail::host_of(reactor);
  if (host == nullptr) [[unlikely]] detail::throw_outside_hooks(operation);
  return *host;
}

}  // namespace

SendResult Reactor::send_encoded(ActorRef to, detail::Envelope* envelope) {
  ReactorHost* host = detail::host_of(this);
  if (host == nullptr) [[unlikely]] {
    detail::free_envelope(envelope);
    detail::throw_outside_hooks("send");
  }
  return host->send(to, envelope);
}

ActorRef Reactor::spawn_packed(const SpawnOptions& options, detail::ConstructReactor construct, void* arguments) {
  return require_current(this, "spawn").spawn(options, construct, arguments);
}

std::uint64_t Reactor::events_delivered() const noexcept { return ReactorAccess::book(*this).events; }

void Reactor::add_handler(std::uint64_t type_id, Thunk thunk) {
  std::vector<ReactorAccess::Handler>& handlers = ReactorAccess::book(*this).handlers;
  for (ReactorAccess::Handler& h : handlers) {
    if (h.type_id == type_id) {
      h.thunk = thunk;
      return;
    }
  }
  handlers.push_back(ReactorAccess::Handler{type_id, thunk});
}

void Reactor::on_message(const Message& message) {
  const std::uint64_t type = message.type_id();
  for (const ReactorAccess::Handler& h : ReactorAccess::book(*this).handlers) {
    if (h.type_id == type) {
      h.thunk(*this, message);
      return;
    }
  }
  on_unhandled(message);
}

void Reactor::on_unhandled(const Message& message) {
  if (ReactorHost* host = detail::host_of(this)) host->count_unhandled(*this, message);
}

void Reactor::on_message_error(const MessageError&) {
  if (ReactorHost* host = detail::host_of(this)) host->count_decode_error();
}

ActorRef Reactor::sender() const { return require_current(this, "sender").sender(); }
Runtime& Reactor::runtime() const { return require_current(this, "runtime").runtime(); }
int Reactor::worker() const { return require_current(this, "worker").worker(); }
void Reactor::stop() { require_current(this, "stop").stop(); }

std::chrono::system_clock::time_point Reactor::now() { return require_current(this, "now").system_now(); }
std::chrono::steady_clock::time_point Reactor::steady_now() {
  return require_current(this, "steady_now").steady_now();
}

std::uint64_t Reactor::random() {
  std::uint64_t (&engine)[2] = ReactorAccess::book(*this).random;
  if ((engine[0] | engine[1]) == 0) [[unlikely]] {
    require_current(this, "random").seed(engine);
    if ((engine[0] | engine[1]) == 0) engine[0] = 1;  // the all-zero state is the one dead end
  }
  // xoroshiro128++ (Blackman and Vigna): 128 bits of state, period 2^128 - 1.
  const std::uint64_t s0 = engine[0];
  std::uint64_t s1 = engine[1];
  const std::uint64_t result = std::rotl(s0 + s1, 17) + s0;
  s1 ^= s0;
  engine[0] = std::rotl(s0, 49) ^ s1 ^ (s1 << 21);
  engine[1] = std::rotl(s1, 28);
  return result;
}

SnapshotRequestId Reactor::request_snapshot(ActorRef target, const std::filesystem::path& file,
                                            SnapshotKind kind) {
  ReactorHost& host = require_current(this, "request_snapshot");
  const SnapshotRequestId id = ReactorAccess::book(*this).next_snapshot_request++;
  host.request_snapshot(id, target, file, kind);
  return id;
}

TimerId Reactor::start_timer(std::chrono::nanoseconds delay, std::chrono::nanoseconds period) {
  ReactorHost& host = require_current(this, "start_timer");
  if (delay.count() < 0 || period.count() < 0) {
    HeapScope system(nullptr);
    throw std::invalid_argument("reheap::Reactor::start_timer: negative delay or period");
  }
  const TimerId id = ReactorAccess::next_timer(*this);
  host.start_timer(id, delay, period);
  return id;
}

void Reactor::cancel_timer(TimerId id) { require_current(this, "cancel_timer").cancel_timer(id); }

SocketId Reactor::listen(const std::string& host, std::uint16_t port, bool reuse_port, int backlog) {
  return require_current(this, "listen").listen(host, port, reuse_port, backlog);
}

std::uint16_t Reactor::local_port(SocketId socket) const {
  return require_current(this, "local_port").local_port(socket);
}

SocketId Reactor::connect(const std::string& host, std::uint16_t port) {
  return require_current(this, "connect").connect(host, port);
}

WriteResult Reactor::write(SocketId socket, std::span<const char> data) {
  return require_current(this, "write").write(socket, data);
}

void Reactor::close(SocketId socket) { require_current(this, "close").close(socket); }

void Reactor::set_no_delay(SocketId socket, bool on) {
  require_current(this, "set_no_delay").set_no_delay(socket, on);
}

void Reactor::pause_reading(SocketId socket) { require_current(this, "pause_reading").set_reading(socket, false); }

void Reactor::resume_reading(SocketId socket) { require_current(this, "resume_reading").set_reading(socket, true); }

void Reactor::set_write_high_water(SocketId socket, std::size_t bytes) {
  require_current(this, "set_write_high_water").set_write_high_water(socket, bytes);
}

void Reactor::on_end(SocketId socket) { close(socket); }

}  // namespace reheap

namespace reheap::detail {

// A program that links the runtime without reheap::global_new (or whose own operator new wins)
// builds its reactors with malloc: they would run, and their snapshots would hold an empty heap
// whose root points into the process's malloc memory. Refused at the first spawn instead.
void require_reactor_in_heap(HeapPtr& heap, Reactor* reactor, const char* who) {
  if (heap->owns(reactor)) [[likely]] return;
  HeapScope system(nullptr);
  char where[32];
  std::snprintf(where, sizeof where, "%p", static_cast<void*>(reactor));
  delete reactor;  // made by the same operator new that is current now: the program's
  heap.reset();
  throw std::logic_error(
      std::string(who) + ": the reactor was built at " + where +
      ", outside its heap: plain `new` does not reach reheap's allocator in this program. Link "
      "reheap::global_new (CMake: target_link_libraries(app PRIVATE reheap::runtime "
      "reheap::global_new); pkg-config's `--libs reheap` includes it), and do not define another "
      "global operator new");
}

}  // namespace reheap::detail
