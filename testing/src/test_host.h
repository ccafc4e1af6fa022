// TestHost: the ReactorHost (reactor_host.h) of a reactor's events on a test's thread.
//
// It answers what a reactor asks from objects the test controls - the time from a VirtualClock,
// entropy from a SeedStream, the sender from the event being delivered - and passes every output
// to a HostOutputs, which decides what happens to it. TestRuntime is one HostOutputs (it queues
// the outputs and drains them when the test steps); a replay of a recording will be another (it
// compares them with the recorded ones), on the same host, which is why the outputs are an
// interface here and not TestRuntime's private business.
//
// It is also the door of an event on a test's thread (deliver): it makes the reactor's heap and
// itself current, counts the event in the reactor, calls the hook and catches what it throws, as
// the runtime's event funnel does on a worker. TestRuntime delivers every event through it, and
// so will a replay driver.
//
// TestHost has no sockets: each TCP operation throws std::logic_error, created with the system
// heap current so that the exception's text does not land in the reactor's heap (the reactor may
// catch it, or it may reach the test). Socket events are made up by the test instead
// (TestRuntime::deliver).
#pragma once

#include <filesystem>
#include <optional>

#include "reactor/reactor_host.h"
#include "reheap/event.h"
#include "reheap/heap.h"
#include "reheap/testing/reactor_failure.h"
#include "reheap/testing/virtual_clock.h"

namespace reheap::testing::detail {

// Where a TestHost sends a reactor's outputs; `self` is the reactor whose event is delivered.
// Called with the reactor's heap current: implementations make the system heap current before
// they allocate anything of their own.
class HostOutputs {
 public:
  virtual ~HostOutputs() = default;
  virtual SendResult send(ActorRef self, ActorRef to, reheap::detail::Envelope* envelope) = 0;
  virtual ActorRef spawn(ActorRef self, const SpawnOptions& options, ReactorHost::Construct construct,
                         void* arguments) = 0;
  virtual void stop(ActorRef self) = 0;
  virtual void request_snapshot(ActorRef self, SnapshotRequestId id, ActorRef target,
                                const std::filesystem::path& file, SnapshotKind kind) = 0;
  virtual void start_timer(ActorRef self, TimerId id, std::chrono::nanoseconds delay,
                           std::chrono::nanoseconds period) = 0;
  virtual void cancel_timer(ActorRef self, TimerId id) = 0;
};

class TestHost final : public ReactorHost {
 public:
  TestHost(const VirtualClock& clock, SeedStream& entropy, HostOutputs& outputs) noexcept
      : clock_(clock), entropy_(entropy), outputs_(outputs) {}

  // Delivers `event` to `reactor` (whose reference is `self`, heap `heap` and SpawnOptions name
  // `name`); `sender` is its message's sender, null for other events. What the hook threw comes
  // back as a ReactorFailure.
  std::optional<ReactorFailure> deliver(Heap& heap, Reactor& reactor, ActorRef self, const std::string& name,
                                        const Event& event, ActorRef sender);

  std::chrono::system_clock::time_point system_now() override { return clock_.system_now(); }
  std::chrono::steady_clock::time_point steady_now() override { return clock_.steady_now(); }
  void seed(std::uint64_t out[2]) override;
  ActorRef sender() override { return sender_; }
  int worker() override { return 0; }  // the test's thread is the one worker
  Runtime& runtime() override;

  SendResult send(ActorRef to, reheap::detail::Envelope* envelope) override {
    return outputs_.send(reactor_, to, envelope);
  }
  ActorRef spawn(const SpawnOptions& options, Construct construct, void* arguments) override {
    return outputs_.spawn(reactor_, options, construct, arguments);
  }
  void stop() override { outputs_.stop(reactor_); }
  void request_snapshot(SnapshotRequestId id, ActorRef target, const std::filesystem::path& file,
                        SnapshotKind kind) override {
    outputs_.request_snapshot(reactor_, id, target, file, kind);
  }
  void start_timer(TimerId id, std::chrono::nanoseconds delay, std::chrono::nanoseconds period) override {
    outputs_.start_timer(reactor_, id, delay, period);
  }
  void cancel_timer(TimerId id) override { outputs_.cancel_timer(reactor_, id); }

  SocketId listen(const std::string& host, std::uint16_t port, bool reuse_port, int backlog) override;
  std::uint16_t local_port(SocketId socket) override;
  SocketId connect(const std::string& host, std::uint16_t port) override;
  WriteResult write(SocketId socket, std::span<const char> data) override;
  void close(SocketId socket) override;
  void set_no_delay(SocketId socket, bool on) override;
  void set_reading(SocketId socket, bool on) override;
  void set_write_high_water(SocketId socket, std::size_t bytes) override;

 private:
  const VirtualClock& clock_;
  SeedStream& entropy_;
  HostOutputs& outputs_;
  ActorRef reactor_;
  ActorRef sender_;
};

}  // namespace reheap::testing::detail
