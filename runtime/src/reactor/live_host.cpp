// LiveHost: a reactor's operations on a worker (see live_host.h).
#include "reactor/live_host.h"

#include "checkpoint/snapshot_request.h"
#include "io/tcp.h"
#include "io/timer_service.h"
#include "reheap/heap_scope.h"
#include "runtime_impl.h"
#include "scheduling/worker.h"

namespace reheap::detail {

std::chrono::system_clock::time_point LiveHost::system_now() {
  if (!have_system_) {
    system_ = worker_.runtime().time->system_now();
    have_system_ = true;
  }
  return system_;
}

std::chrono::steady_clock::time_point LiveHost::steady_now() {
  if (!have_steady_) {
    steady_ = worker_.runtime().time->steady_now();
    have_steady_ = true;
  }
  return steady_;
}

void LiveHost::seed(std::uint64_t out[2]) { worker_.runtime().entropy->fill(out); }

ActorRef LiveHost::sender() { return ActorRef(cell_->current_sender); }
int LiveHost::worker() { return worker_.index(); }
Runtime& LiveHost::runtime() { return worker_.runtime().owner; }

SendResult LiveHost::send(ActorRef to, Envelope* envelope) {
  return send_envelope(cell_, to, envelope, SendResult::kOk);
}

ActorRef LiveHost::spawn(const SpawnOptions& options, Construct construct, void* arguments) {
  return worker_.runtime().owner.spawn_constructed(options, construct, arguments);
}

void LiveHost::stop() {
  if (cell_->state == CellState::kLive) {
    cell_->state = CellState::kStopping;
    cell_->graceful_stop = true;
    worker_.count_settling(cell_);
  }
}

void LiveHost::request_snapshot(SnapshotRequestId id, ActorRef target, const std::filesystem::path& file,
                                SnapshotKind kind) {
  send_snapshot_request(cell_, id, target, file, kind);
}

void LiveHost::start_timer(TimerId id, std::chrono::nanoseconds delay, std::chrono::nanoseconds period) {
  detail::start_timer(worker_, cell_, id, delay, period);
}

void LiveHost::cancel_timer(TimerId id) { detail::cancel_timer(worker_, cell_, id); }

// listen and connect build texts for their errors (and listen always does): with the system heap
// current, so that nothing of the runtime's is allocated and freed in the reactor's heap, whose
// bytes must depend on the reactor alone (a replay, which has no sockets, would see other bytes).
SocketId LiveHost::listen(const std::string& host, std::uint16_t port, bool reuse_port, int backlog) {
  HeapScope system(nullptr);
  return tcp_listen(worker_, cell_, host, port, reuse_port, backlog);
}

std::uint16_t LiveHost::local_port(SocketId socket) { return tcp_local_port(cell_, socket); }

SocketId LiveHost::connect(const std::string& host, std::uint16_t port) {
  HeapScope system(nullptr);
  return tcp_connect(worker_, cell_, host, port);
}

WriteResult LiveHost::write(SocketId socket, std::span<const char> data) { return tcp_write(cell_, socket, data); }
void LiveHost::close(SocketId socket) { tcp_close(cell_, socket); }
void LiveHost::set_no_delay(SocketId socket, bool on) { tcp_set_no_delay(cell_, socket, on); }

void LiveHost::set_reading(SocketId socket, bool on) { tcp_set_reading(cell_, socket, on); }

void LiveHost::set_write_high_water(SocketId socket, std::size_t bytes) {
  tcp_set_write_high_water(cell_, socket, bytes);
}

}  // namespace reheap::detail
