// Reactor: the base class's operations, each forwarding to the runtime part that owns it.
#include "reheap/reactor.h"

#include <stdexcept>
#include <string>

#include "cell.h"
#include "reactor_access.h"
#include "reheap/heap_scope.h"
#include "runtime_impl.h"
#include "snapshot_request.h"
#include "tcp.h"
#include "timer_service.h"
#include "worker.h"

namespace reheap {

using detail::Cell;

Reactor::Reactor() : magic_(detail::kReactorMagic) {}

Reactor::~Reactor() = default;

Cell* Reactor::require_current(const char* operation) const {
  Cell* c = detail::current_cell();
  if (c == nullptr || c->reactor != this) [[unlikely]] {
    HeapScope system(nullptr);
    throw std::logic_error(std::string("reheap::Reactor::") + operation +
                           ": called outside this reactor's hooks (operations are valid only "
                           "while the runtime runs one of its hooks, on its worker thread)");
  }
  return c;
}

void Reactor::add_handler(std::uint64_t type_id, Thunk thunk) {
  for (Handler& h : handlers_) {
    if (h.type_id == type_id) {
      h.thunk = thunk;
      return;
    }
  }
  handlers_.push_back(Handler{type_id, thunk});
}

void Reactor::on_message(const Message& message) {
  const std::uint64_t type = message.type_id();
  for (const Handler& h : handlers_) {
    if (h.type_id == type) {
      h.thunk(*this, message);
      return;
    }
  }
  on_unhandled(message);
}

void Reactor::on_unhandled(const Message&) {
  if (Cell* c = detail::current_cell(); c != nullptr && c->reactor == this) c->stats.unhandled++;
}

void Reactor::on_message_error(const MessageError&) {
  if (Cell* c = detail::current_cell(); c != nullptr && c->reactor == this) c->stats.decode_errors++;
}

ActorRef Reactor::sender() const { return ActorRef(require_current("sender")->current_sender); }

Runtime& Reactor::runtime() const {
  return detail::runtime_of(require_current("runtime")).owner;
}

int Reactor::worker() const {
  return require_current("worker")->worker.load(std::memory_order_relaxed)->index();
}

void Reactor::stop() {
  Cell* c = require_current("stop");
  if (c->state == detail::CellState::kLive) {
    c->state = detail::CellState::kStopping;
    c->graceful_stop = true;
  }
}

SnapshotRequestId Reactor::request_snapshot(ActorRef target, const std::filesystem::path& file,
                                            SnapshotKind kind) {
  Cell* c = require_current("request_snapshot");
  const SnapshotRequestId id = next_snapshot_request_++;
  detail::send_snapshot_request(c, id, target, file, kind);
  return id;
}

TimerId Reactor::start_timer(std::chrono::nanoseconds delay, std::chrono::nanoseconds period) {
  Cell* c = require_current("start_timer");
  if (delay.count() < 0 || period.count() < 0) {
    HeapScope system(nullptr);
    throw std::invalid_argument("reheap::Reactor::start_timer: negative delay or period");
  }
  const TimerId id = next_timer_++;
  detail::start_timer(*c->worker.load(std::memory_order_relaxed), c, id, delay, period);
  return id;
}

void Reactor::cancel_timer(TimerId id) {
  Cell* c = require_current("cancel_timer");
  detail::cancel_timer(*c->worker.load(std::memory_order_relaxed), c, id);
}

SocketId Reactor::listen(const std::string& host, std::uint16_t port, bool reuse_port,
                         int backlog) {
  Cell* c = require_current("listen");
  return detail::tcp_listen(*c->worker.load(std::memory_order_relaxed), c, host, port, reuse_port,
                            backlog);
}

std::uint16_t Reactor::local_port(SocketId socket) const {
  return detail::tcp_local_port(require_current("local_port"), socket);
}

SocketId Reactor::connect(const std::string& host, std::uint16_t port) {
  Cell* c = require_current("connect");
  return detail::tcp_connect(*c->worker.load(std::memory_order_relaxed), c, host, port);
}

bool Reactor::write(SocketId socket, std::span<const char> data) {
  return detail::tcp_write(require_current("write"), socket, data);
}

void Reactor::close(SocketId socket) { detail::tcp_close(require_current("close"), socket); }

void Reactor::set_no_delay(SocketId socket, bool on) {
  detail::tcp_set_no_delay(require_current("set_no_delay"), socket, on);
}

}  // namespace reheap
