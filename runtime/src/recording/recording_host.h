// RecordingHost: the host a recorded reactor's hooks see (reactor_host.h). It forwards every
// operation to the worker's LiveHost and writes down, in call order, what the operation asked
// and what the runtime answered, as one record after the event's input record (RECORDING_FORMAT.md).
//
// Records are written with no heap current: the log is process memory, never the reactor's heap
// (the hook that calls us runs with the reactor's heap current). An operation that throws (a
// spawn, a listen) is written with what it threw, and the exception goes on to the hook.
//
// A long event (a hook that sends a million messages) hands its block to the sink whenever the
// block is full, rather than growing one block for the whole event: the format allows a block
// to continue an event (RECORDING_FORMAT.md, "Blocks"). A sink that fails then does not throw
// into the hook: the failure is kept, and the recorder stops the recording at the event's end
// (failure()); no block is handed over after it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "io/timer_state.h"
#include "reactor/live_host.h"
#include "recording/fatal_flush.h"
#include "reheap/recording.h"
#include "reheap/recording_log.h"

namespace reheap::detail::recording {

// Appends `record` to `writer`, first growing the block's buffer under `slot` if it might move
// (fatal_flush.h): a fatal signal's handler on another thread may be reading the closed events'
// records at the buffer's start.
inline void append_record(LogWriter& writer, FatalFlushSlot& slot, const LogRecord& record) {
  const std::size_t need = LogWriter::encoded_bound(record);
  if (writer.room() < need) [[unlikely]] {
    const FatalFlushSlot::Locked locked(slot);
    writer.reserve_room(need);
  }
  writer.append(record);
}

class RecordingHost final : public ReactorHost {
 public:
  RecordingHost(LogWriter& writer, FatalFlushSlot& slot, RecordedOutputs outputs) noexcept
      : writer_(writer), slot_(slot), outputs_(outputs) {}

  // The event being delivered goes to `live`.
  void bind(LiveHost& live) noexcept {
    live_ = &live;
    if (!cancelled_timers_.empty()) cancelled_timers_.clear();
  }
  // The timers the event being delivered (or the last one) cancelled, as they stood before.
  std::vector<TimerState>& cancelled_timers() noexcept { return cancelled_timers_; }

  std::chrono::system_clock::time_point system_now() override;
  std::chrono::steady_clock::time_point steady_now() override;
  void seed(std::uint64_t out[2]) override;
  ActorRef sender() override { return live_->sender(); }  // the message record holds it
  int worker() override;
  Runtime& runtime() override { return live_->runtime(); }

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

  // What made a block handed over during the event fail ("" if nothing did); take_failure()
  // returns it and forgets it.
  bool failed() const noexcept { return !failure_.empty(); }
  std::string take_failure() { return std::exchange(failure_, std::string()); }

  void count_unhandled(const Reactor& reactor, const Message& message) noexcept override {
    live_->count_unhandled(reactor, message);
  }
  void count_late_reply() noexcept override { live_->count_late_reply(); }
  void count_decode_error() noexcept override { live_->count_decode_error(); }

 private:
  // The scratch record, cleared, for the next record of `kind`.
  LogRecord& record(RecordKind kind) noexcept;
  // Fills the payload fields of a send or write record as `outputs_` asks.
  void payload(LogRecord& r, const void* data, std::size_t size);
  void append();
  // During the event, the block is full: it goes to the sink (a failure is kept, see above).
  [[gnu::cold, gnu::noinline]] void hand_over_full_block();

  LogWriter& writer_;
  FatalFlushSlot& slot_;
  RecordedOutputs outputs_;
  LiveHost* live_ = nullptr;
  LogRecord scratch_;  // reused: its strings keep their capacity
  std::string failure_;
  std::vector<TimerState> cancelled_timers_;
};

}  // namespace reheap::detail::recording
