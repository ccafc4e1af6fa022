// RecordingHost (see recording_host.h).
#include "recording/recording_host.h"

#include <xxhash.h>

#include <functional>

#include "io/timer_service.h"
#include "messaging/envelope.h"
#include "reheap/heap_scope.h"

namespace reheap::detail::recording {

LogRecord& RecordingHost::record(RecordKind kind) noexcept {
  scratch_.clear();
  scratch_.kind = kind;
  return scratch_;
}

void RecordingHost::append() {
  HeapScope system(nullptr);
  append_record(writer_, slot_, scratch_);
  if (writer_.pending_bytes() >= kLogBlockBytes) [[unlikely]] hand_over_full_block();
}

void RecordingHost::hand_over_full_block() {
  if (!failure_.empty()) return;
  HeapScope system(nullptr);
  try {
    const FatalFlushSlot::Locked locked(slot_);
    writer_.flush();
  } catch (const std::exception& e) {
    failure_ = e.what();
    if (failure_.empty()) failure_ = "the log's sink failed";
  }
}

void RecordingHost::payload(LogRecord& r, const void* data, std::size_t size) {
  r.length = size;
  if (outputs_ == RecordedOutputs::kAnswersOnly) return;
  r.has_digest = true;
  r.digest = XXH3_64bits(data, size);
  if (outputs_ == RecordedOutputs::kPayloads) {
    HeapScope system(nullptr);
    r.has_bytes = true;
    r.bytes.assign(static_cast<const char*>(data), size);
  }
}

std::chrono::system_clock::time_point RecordingHost::system_now() {
  const auto t = live_->system_now();
  record(RecordKind::kSystemNow).value[0] = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
  append();
  return t;
}

std::chrono::steady_clock::time_point RecordingHost::steady_now() {
  const auto t = live_->steady_now();
  record(RecordKind::kSteadyNow).value[0] = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
  append();
  return t;
}

void RecordingHost::seed(std::uint64_t out[2]) {
  live_->seed(out);
  LogRecord& r = record(RecordKind::kSeed);
  r.value[0] = out[0];
  r.value[1] = out[1];
  append();
}

int RecordingHost::worker() {
  const int index = live_->worker();
  record(RecordKind::kWorker).value[0] = static_cast<std::uint64_t>(static_cast<std::int64_t>(index));
  append();
  return index;
}

SendResult RecordingHost::send(ActorRef to, Envelope* envelope) {
  // The commonest output: its record (with at most a digest of the payload) is encoded straight
  // into the block. The envelope is gone once sent: read what the record needs first.
  if (envelope != nullptr && outputs_ != RecordedOutputs::kPayloads) [[likely]] {
    const std::uint64_t type_id = envelope->type_id;
    const Encoding encoding = envelope->encoding;
    const std::size_t length = envelope->size;
    const bool digest = outputs_ == RecordedOutputs::kDigests;
    const std::uint64_t value = digest ? XXH3_64bits(envelope->payload(), length) : 0;
    const SendResult result = live_->send(to, envelope);
    if (!writer_.append_send(to, type_id, encoding, length, digest, value, static_cast<std::uint8_t>(result)))
        [[unlikely]] {
      LogRecord& r = record(RecordKind::kSend);
      r.ref = to;
      r.type_id = type_id;
      r.encoding = encoding;
      r.length = length;
      r.has_digest = digest;
      r.digest = value;
      r.result = static_cast<std::uint8_t>(result);
      append();
    } else if (writer_.pending_bytes() >= kLogBlockBytes) [[unlikely]] {
      hand_over_full_block();
    }
    return result;
  }
  LogRecord& r = record(RecordKind::kSend);
  r.ref = to;
  if (envelope != nullptr) {
    r.type_id = envelope->type_id;
    r.encoding = envelope->encoding;
    payload(r, envelope->payload(), envelope->size);
  }
  const SendResult result = live_->send(to, envelope);
  scratch_.result = static_cast<std::uint8_t>(result);
  append();
  return result;
}

ActorRef RecordingHost::spawn(const SpawnOptions& options, Construct construct, void* arguments) {
  ActorRef child;
  try {
    child = live_->spawn(options, construct, arguments);
  } catch (const std::exception& e) {
    {
      HeapScope system(nullptr);
      LogRecord& r = record(RecordKind::kSpawn);
      r.text = options.name;
      r.detail = e.what();
    }
    append();
    throw;
  }
  {
    HeapScope system(nullptr);
    LogRecord& r = record(RecordKind::kSpawn);
    r.text = options.name;
    r.ref = child;
  }
  append();
  return child;
}

void RecordingHost::stop() {
  live_->stop();
  record(RecordKind::kStopCall);
  append();
}

void RecordingHost::request_snapshot(SnapshotRequestId id, ActorRef target, const std::filesystem::path& file,
                                     SnapshotKind kind) {
  live_->request_snapshot(id, target, file, kind);
  LogRecord& r = record(RecordKind::kRequestSnapshot);
  r.id = id;
  r.ref = target;
  r.value[0] = static_cast<std::uint64_t>(kind);
  append();
}

void RecordingHost::start_timer(TimerId id, std::chrono::nanoseconds delay, std::chrono::nanoseconds period) {
  live_->start_timer(id, delay, period);
  LogRecord& r = record(RecordKind::kTimerStart);
  r.id = id;
  r.value[0] = static_cast<std::uint64_t>(delay.count());
  r.value[1] = static_cast<std::uint64_t>(period.count());
  append();
}

void RecordingHost::cancel_timer(TimerId id) {
  // As it stood: a restart that undoes this event brings it back (replay/exact_restart.h).
  if (const std::optional<TimerState> before = timer_state(live_->cell(), id)) {
    HeapScope system(nullptr);
    cancelled_timers_.push_back(*before);
  }
  live_->cancel_timer(id);
  record(RecordKind::kTimerCancel).id = id;
  append();
}

namespace {

// listen and connect: the socket, or what the runtime threw instead.
template <class Operation>
SocketId recorded_socket_call(LogRecord& r, const std::string& host, std::uint16_t port, Operation operation,
                              const std::function<void()>& append) {
  {
    HeapScope system(nullptr);
    r.text = host;
  }
  r.port = port;
  try {
    r.id = operation();
  } catch (const std::exception& e) {
    {
      HeapScope system(nullptr);
      r.detail = e.what();
    }
    append();
    throw;
  }
  append();
  return r.id;
}

}  // namespace

SocketId RecordingHost::listen(const std::string& host, std::uint16_t port, bool reuse_port, int backlog) {
  return recorded_socket_call(
      record(RecordKind::kListen), host, port, [&] { return live_->listen(host, port, reuse_port, backlog); },
      [this] { append(); });
}

SocketId RecordingHost::connect(const std::string& host, std::uint16_t port) {
  return recorded_socket_call(
      record(RecordKind::kConnectCall), host, port, [&] { return live_->connect(host, port); },
      [this] { append(); });
}

std::uint16_t RecordingHost::local_port(SocketId socket) {
  const std::uint16_t port = live_->local_port(socket);
  LogRecord& r = record(RecordKind::kLocalPort);
  r.id = socket;
  r.port = port;
  append();
  return port;
}

WriteResult RecordingHost::write(SocketId socket, std::span<const char> data) {
  LogRecord& r = record(RecordKind::kWrite);
  r.id = socket;
  payload(r, data.data(), data.size());
  const WriteResult result = live_->write(socket, data);
  scratch_.result = encode_write_result(result);
  append();
  return result;
}

void RecordingHost::close(SocketId socket) {
  live_->close(socket);
  record(RecordKind::kClose).id = socket;
  append();
}

void RecordingHost::set_no_delay(SocketId socket, bool on) {
  live_->set_no_delay(socket, on);
  LogRecord& r = record(RecordKind::kSetNoDelay);
  r.id = socket;
  r.value[0] = on ? 1 : 0;
  append();
}

void RecordingHost::set_reading(SocketId socket, bool on) {
  live_->set_reading(socket, on);
  LogRecord& r = record(RecordKind::kSetReading);
  r.id = socket;
  r.value[0] = on ? 1 : 0;
  append();
}

void RecordingHost::set_write_high_water(SocketId socket, std::size_t bytes) {
  live_->set_write_high_water(socket, bytes);
  LogRecord& r = record(RecordKind::kSetWriteHighWater);
  r.id = socket;
  r.value[0] = bytes;
  append();
}

}  // namespace reheap::detail::recording
