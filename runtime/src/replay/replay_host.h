// ReplayHost: the ReactorHost (reactor_host.h) of a replayed event, for a test's Replay
// (reheap/testing/replay.h) and for a recorded reactor's exact restart (exact_restart.h). It
// answers every question of the hook - the time, a seed, the worker, a SendResult, a child's
// reference, a socket id - with the answer recorded for that event, in call order, and checks that
// each output and question is the recorded one; the runtime does nothing (no message leaves, no
// child is built, no timer is armed on a clock): the recording says what it did.
//
// A call that is not the recorded one is a divergence. It is written down (the first one only)
// and the hook is unwound with AbortEvent, a type no std::exception handler catches, so that the
// replay stops at the event that departed; if the reactor swallows it with catch (...), the
// divergence is reported anyway when the hook returns. Lenient mode (the recorded hook threw, so
// its records stop where it threw; or output checks are off) answers from the log while the
// calls match it and with defaults afterwards, and reports nothing.
//
// Allocation: the hook runs with the reactor's heap current; every method here makes the system
// heap current before it allocates, so that nothing of the replay lands in the replayed heap.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reactor/reactor_host.h"
#include "replay/recorded_log.h"

namespace reheap::detail::replay {

// Thrown through a hook to stop it at a divergence.
struct AbortEvent {};

enum class CallMismatch : std::uint8_t {
  kOutput,         // an output or a question other than the recorded one
  kMissingOutput,  // the hook returned before making a recorded output or asking a question
  kExtraOutput,    // the hook made an output or asked a question after the recorded ones
};

struct DivergenceNote {
  CallMismatch kind = CallMismatch::kOutput;
  std::string expected;
  std::string actual;
};

// A timer the reactor has armed and that has not fired for good or been cancelled.
struct ArmedTimer {
  std::chrono::nanoseconds delay{0};
  std::chrono::nanoseconds period{0};
};

// A message the replayed reactor sent, with the recorded answer it got.
struct SentMessage {
  std::uint64_t event = 0;
  ActorRef to{};
  std::uint64_t type_id = 0;
  Encoding encoding = Encoding::kRaw;
  std::vector<char> payload;
  SendResult result = SendResult::kOk;
};

struct ReplayHostOptions {
  // Lenient events answer with these once the calls leave the recording (see above).
  std::chrono::system_clock::time_point first_system_now{};
  std::chrono::steady_clock::time_point first_steady_now{};
  std::uint64_t seed_stream = 0;  // the seeds' SplitMix64 stream
  bool keep_sends = false;        // sends(): every send, payload included
  // What Reactor::runtime() returns; null: it throws std::logic_error (a test's replay has none).
  Runtime* runtime = nullptr;
};

class ReplayHost final : public ReactorHost {
 public:
  explicit ReplayHost(const ReplayHostOptions& options) : options_(options), seeds_(options.seed_stream) {
    last_system_ = options.first_system_now;
    last_steady_ = options.first_steady_now;
  }

  // The event `event` is delivered to `reactor` next. `lenient`: see above.
  void begin(const RecordedLogEvent& event, Reactor& reactor, bool lenient);
  // After the hook: a recorded call the hook did not make is kMissingOutput (unless lenient).
  void finish();
  const std::optional<DivergenceNote>& divergence() const noexcept { return divergence_; }

  std::map<TimerId, ArmedTimer>& armed_timers() noexcept { return armed_; }
  std::vector<SentMessage>& sends() noexcept { return sends_; }

  std::chrono::system_clock::time_point system_now() override;
  std::chrono::steady_clock::time_point steady_now() override;
  void seed(std::uint64_t out[2]) override;
  ActorRef sender() override { return sender_; }
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

  // Keeps the reactor's socket counter past `id`, as minting it did in the recording.
  void socket_seen(SocketId id) noexcept;

 private:
  // The recorded record answering `actual` (the call as a record), or null: a mismatch (then a
  // divergence, unless lenient) or no record left.
  const LogRecord* match(const LogRecord& actual);
  [[noreturn]] void diverge(CallMismatch kind, std::string expected, std::string actual);
  static bool same_call(const LogRecord& expected, const LogRecord& actual);
  std::uint64_t next_seed() noexcept;

  const ReplayHostOptions options_;
  const RecordedLogEvent* event_ = nullptr;
  Reactor* reactor_ = nullptr;
  std::size_t next_ = 0;  // the next answer record of the event
  bool lenient_ = false;
  ActorRef sender_;
  std::optional<DivergenceNote> divergence_;
  std::map<TimerId, ArmedTimer> armed_;
  std::vector<SentMessage> sends_;
  // Lenient defaults: the last time answered, and seeds from a fixed stream.
  std::chrono::system_clock::time_point last_system_;
  std::chrono::steady_clock::time_point last_steady_;
  std::uint64_t seeds_;
};

// Writes into `reactor`'s heap what a recorded outside_state record says the runtime wrote there
// between the event and the next (its timers and sockets, for a snapshot), and clears it, as the
// runtime did (reactor_snapshot.cpp): the heap then makes the recorded allocations. The reactor's
// heap must be current; the record is one RecordedLogEvent::outside holds (checked by the reader).
void rewrite_outside_state(Reactor& reactor, const LogRecord& record);

}  // namespace reheap::detail::replay
