// LiveHost: the runtime's ReactorHost (reactor_host.h): a reactor's operations on a worker go to
// its mailboxes, libuv timers and sockets, the runtime's TimeSource and EntropySource. One per
// worker, pointed at the cell of the event being delivered (EventFunnel::deliver).
#pragma once

#include <chrono>

#include "reactor/cell.h"
#include "reactor/reactor_host.h"

namespace reheap::detail {

class Worker;

class LiveHost final : public ReactorHost {
 public:
  explicit LiveHost(Worker& worker) noexcept : worker_(worker) {}

  // A new event of `c`: its time is read again on first use.
  void begin(Cell* c) noexcept {
    cell_ = c;
    have_system_ = false;
    have_steady_ = false;
  }
  Cell* cell() const noexcept { return cell_; }

  std::chrono::system_clock::time_point system_now() override;
  std::chrono::steady_clock::time_point steady_now() override;
  void seed(std::uint64_t out[2]) override;
  ActorRef sender() override;
  int worker() override;
  Runtime& runtime() override;

  SendResult send(ActorRef to, Envelope* envelope) override;
  ActorRef spawn(const SpawnOptions& options, Construct construct, void* arguments) override;
  void stop() override;
  void request_snapshot(SnapshotRequestId id, ActorRef target, const std::filesystem::path& file,
                        SnapshotKind kind) override;
  void start_timer(TimerId id, std::chrono::nanoseconds delay, std::chrono::nanoseconds period) override;
  void cancel_timer(TimerId id) override;
  SocketId listen(const std::string& host, std::uint16_t port, bool reuse_port, int backlog) override;
  std::uint16_t local_port(SocketId socket) override;
  SocketId connect(const std::string& host, std::uint16_t port) override;
  WriteResult write(SocketId socket, std::span<const char> data) override;
  void close(SocketId socket) override;
  void set_no_delay(SocketId socket, bool on) override;
  void set_reading(SocketId socket, bool on) override;
  void set_write_high_water(SocketId socket, std::size_t bytes) override;

  void count_unhandled(const Reactor& reactor, const Message& message) noexcept override;
  void count_late_reply() noexcept override { cell_->stats.late_replies++; }
  void count_decode_error() noexcept override { cell_->stats.decode_errors++; }

 private:
  Worker& worker_;
  Cell* cell_ = nullptr;
  bool have_system_ = false;
  bool have_steady_ = false;
  std::chrono::system_clock::time_point system_{};
  std::chrono::steady_clock::time_point steady_{};
};

}  // namespace reheap::detail
