// ReplayHost: answers from the log, checks every call against it (see replay_host.h).
#include "replay/replay_host.h"

#include <xxhash.h>

#include <stdexcept>
#include <system_error>

#include "messaging/envelope.h"
#include "reactor/reactor_access.h"
#include "reheap/heap_scope.h"
#include "replay/record_text.h"

namespace reheap::detail::replay {
namespace {

std::int64_t ns_of(std::uint64_t recorded) noexcept { return static_cast<std::int64_t>(recorded); }

LogRecord call(RecordKind kind) {
  LogRecord r;
  r.kind = kind;
  return r;
}

// What a recorded socket operation threw, thrown again with the same text. The original was a
// std::system_error; its code is not recorded, so the replayed one says io_error.
class RecordedSocketError : public std::system_error {
 public:
  explicit RecordedSocketError(std::string what)
      : std::system_error(std::make_error_code(std::errc::io_error)), what_(std::move(what)) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

[[noreturn, gnu::cold]] void throw_not_recorded(const char* operation) {
  throw std::logic_error(std::string("reheap: replay: ") + operation +
                         " was not recorded for this event (the recorded hook threw before it), and a "
                         "replay has no sockets to do it");
}

}  // namespace

void ReplayHost::begin(const RecordedLogEvent& event, Reactor& reactor, bool lenient) {
  event_ = &event;
  reactor_ = &reactor;
  next_ = 0;
  lenient_ = lenient;
  divergence_.reset();
  sender_ = event.input.kind == RecordKind::kMessage ? event.input.ref : ActorRef();
}

void ReplayHost::finish() {
  if (divergence_ || lenient_ || next_ >= event_->answers.size()) return;
  const HeapScope system(nullptr);
  divergence_ = DivergenceNote{CallMismatch::kMissingOutput, describe_record(event_->answers[next_], true),
                               "nothing: the hook returned"};
}

void ReplayHost::diverge(CallMismatch kind, std::string expected, std::string actual) {
  divergence_ = DivergenceNote{kind, std::move(expected), std::move(actual)};
  throw AbortEvent{};
}

bool ReplayHost::same_call(const LogRecord& e, const LogRecord& a) {
  if (e.kind != a.kind) return false;
  switch (e.kind) {
    case RecordKind::kSend:
    case RecordKind::kWrite:
      if (e.ref != a.ref || e.id != a.id || e.length != a.length) return false;
      if (e.kind == RecordKind::kSend && (e.type_id != a.type_id || e.encoding != a.encoding)) return false;
      if (e.has_digest && e.digest != a.digest) return false;
      return !e.has_bytes || e.bytes == a.bytes;
    case RecordKind::kSpawn:
      return e.text == a.text;
    case RecordKind::kRequestSnapshot:
      return e.id == a.id && e.ref == a.ref && e.value[0] == a.value[0];
    case RecordKind::kTimerStart:
      return e.id == a.id && e.value[0] == a.value[0] && e.value[1] == a.value[1];
    case RecordKind::kTimerCancel:
    case RecordKind::kLocalPort:
    case RecordKind::kClose:
      return e.id == a.id;
    case RecordKind::kSetNoDelay:
    case RecordKind::kSetReading:
    case RecordKind::kSetWriteHighWater:
      return e.id == a.id && e.value[0] == a.value[0];
    case RecordKind::kListen:
    case RecordKind::kConnectCall:
      return e.text == a.text && e.port == a.port;
    default:  // questions: the kind is the whole question
      return true;
  }
}

const LogRecord* ReplayHost::match(const LogRecord& actual) {
  if (divergence_) throw AbortEvent{};  // the hook swallowed the first one: keep unwinding
  const std::vector<LogRecord>& answers = event_->answers;
  const bool left = next_ < answers.size();
  if (left && same_call(answers[next_], actual)) return &answers[next_++];
  if (lenient_) {
    // The recorded answer while the calls still follow the recording; defaults after.
    if (left && answers[next_].kind == actual.kind) return &answers[next_++];
    return nullptr;
  }
  if (!left) diverge(CallMismatch::kExtraOutput, "nothing more: the recorded hook returned", describe_record(actual, false));
  diverge(CallMismatch::kOutput, describe_record(answers[next_], true), describe_record(actual, false));
}

std::chrono::system_clock::time_point ReplayHost::system_now() {
  const HeapScope system(nullptr);
  if (const LogRecord* r = match(call(RecordKind::kSystemNow))) {
    last_system_ = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(ns_of(r->value[0]))));
  }
  return last_system_;
}

std::chrono::steady_clock::time_point ReplayHost::steady_now() {
  const HeapScope system(nullptr);
  if (const LogRecord* r = match(call(RecordKind::kSteadyNow))) {
    last_steady_ = std::chrono::steady_clock::time_point(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::nanoseconds(ns_of(r->value[0]))));
  }
  return last_steady_;
}

void ReplayHost::seed(std::uint64_t out[2]) {
  const HeapScope system(nullptr);
  if (const LogRecord* r = match(call(RecordKind::kSeed))) {
    out[0] = r->value[0];
    out[1] = r->value[1];
    return;
  }
  out[0] = next_seed();
  out[1] = next_seed();
}

std::uint64_t ReplayHost::next_seed() noexcept {
  // SplitMix64: a Weyl sequence through a bijective mixer, so that seed streams 0, 1, 2, ... are
  // unrelated.
  std::uint64_t z = (seeds_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int ReplayHost::worker() {
  const HeapScope system(nullptr);
  if (const LogRecord* r = match(call(RecordKind::kWorker))) return static_cast<int>(ns_of(r->value[0]));
  return 0;
}

Runtime& ReplayHost::runtime() {
  if (options_.runtime != nullptr) return *options_.runtime;
  const HeapScope system(nullptr);
  throw std::logic_error(
      "reheap::Reactor::runtime: a replayed reactor has no reheap::Runtime (its recording does not "
      "hold what runtime() did); use the reactor's own operations");
}

SendResult ReplayHost::send(ActorRef to, Envelope* envelope) {
  const HeapScope system(nullptr);
  LogRecord actual = call(RecordKind::kSend);
  actual.ref = to;
  SentMessage sent;
  sent.event = event_->index;
  sent.to = to;
  if (envelope != nullptr) {
    actual.type_id = envelope->type_id;
    actual.encoding = envelope->encoding;
    actual.length = envelope->size;
    actual.has_digest = true;
    actual.digest = XXH3_64bits(envelope->payload(), envelope->size);
    actual.has_bytes = true;
    actual.bytes.assign(static_cast<const char*>(envelope->payload()), envelope->size);
    sent.type_id = envelope->type_id;
    sent.encoding = envelope->encoding;
    if (options_.keep_sends) sent.payload.assign(actual.bytes.begin(), actual.bytes.end());
    free_envelope(envelope);  // nothing leaves a replay
  }
  const LogRecord* r = match(actual);
  sent.result = r != nullptr ? static_cast<SendResult>(r->result) : SendResult::kOk;
  const SendResult result = sent.result;
  if (options_.keep_sends) sends_.push_back(std::move(sent));
  return result;
}

ActorRef ReplayHost::spawn(const SpawnOptions& options, Construct, void*) {
  const HeapScope system(nullptr);
  LogRecord actual = call(RecordKind::kSpawn);
  actual.text = options.name;
  const LogRecord* r = match(actual);
  if (r == nullptr) return ActorRef();
  if (!r->detail.empty()) throw std::runtime_error(r->detail);  // the recorded spawn threw this
  return r->ref;
}

void ReplayHost::stop() {
  const HeapScope system(nullptr);
  match(call(RecordKind::kStopCall));
}

void ReplayHost::request_snapshot(SnapshotRequestId id, ActorRef target, const std::filesystem::path&,
                                  SnapshotKind kind) {
  const HeapScope system(nullptr);
  LogRecord actual = call(RecordKind::kRequestSnapshot);
  actual.id = id;
  actual.ref = target;
  actual.value[0] = static_cast<std::uint64_t>(kind);
  match(actual);
}

void ReplayHost::start_timer(TimerId id, std::chrono::nanoseconds delay, std::chrono::nanoseconds period) {
  const HeapScope system(nullptr);
  LogRecord actual = call(RecordKind::kTimerStart);
  actual.id = id;
  actual.value[0] = static_cast<std::uint64_t>(delay.count());
  actual.value[1] = static_cast<std::uint64_t>(period.count());
  match(actual);
  armed_[id] = ArmedTimer{delay, period};
}

void ReplayHost::cancel_timer(TimerId id) {
  const HeapScope system(nullptr);
  LogRecord actual = call(RecordKind::kTimerCancel);
  actual.id = id;
  match(actual);
  armed_.erase(id);
}

void ReplayHost::socket_seen(SocketId id) noexcept {
  SocketId& counter = ReactorAccess::socket_counter(*reactor_);
  if (counter <= id) counter = id + 1;
}

SocketId ReplayHost::listen(const std::string& host, std::uint16_t port, bool, int) {
  const HeapScope system(nullptr);
  LogRecord actual = call(RecordKind::kListen);
  actual.text = host;
  actual.port = port;
  const LogRecord* r = match(actual);
  if (r == nullptr) throw_not_recorded("listen");
  if (r->id == 0) throw RecordedSocketError(r->detail);
  socket_seen(r->id);
  return r->id;
}

SocketId ReplayHost::connect(const std::string& host, std::uint16_t port) {
  const HeapScope system(nullptr);
  LogRecord actual = call(RecordKind::kConnectCall);
  actual.text = host;
  actual.port = port;
  const LogRecord* r = match(actual);
  if (r == nullptr) throw_not_recorded("connect");
  if (r->id == 0) throw RecordedSocketError(r->detail);
  socket_seen(r->id);
  return r->id;
}

std::uint16_t ReplayHost::local_port(SocketId socket) {
  const HeapScope system(nullptr);
  LogRecord actual = call(RecordKind::kLocalPort);
  actual.id = socket;
  const LogRecord* r = match(actual);
  return r != nullptr ? r->port : 0;
}

WriteResult ReplayHost::write(SocketId socket, std::span<const char> data) {
  const HeapScope system(nullptr);
  LogRecord actual = call(RecordKind::kWrite);
  actual.id = socket;
  actual.length = data.size();
  actual.has_digest = true;
  actual.digest = XXH3_64bits(data.data(), data.size());
  actual.has_bytes = true;
  actual.encoding = Encoding::kRaw;
  actual.bytes.assign(data.data(), data.size());
  const LogRecord* r = match(actual);
  return r != nullptr ? decode_write_result(r->result) : WriteResult{};
}

void ReplayHost::close(SocketId socket) {
  const HeapScope system(nullptr);
  LogRecord actual = call(RecordKind::kClose);
  actual.id = socket;
  match(actual);
}

void ReplayHost::set_no_delay(SocketId socket, bool on) {
  const HeapScope system(nullptr);
  LogRecord actual = call(RecordKind::kSetNoDelay);
  actual.id = socket;
  actual.value[0] = on ? 1 : 0;
  match(actual);
}

void ReplayHost::set_reading(SocketId socket, bool on) {
  const HeapScope system(nullptr);
  LogRecord actual = call(RecordKind::kSetReading);
  actual.id = socket;
  actual.value[0] = on ? 1 : 0;
  match(actual);
}

void ReplayHost::set_write_high_water(SocketId socket, std::size_t bytes) {
  const HeapScope system(nullptr);
  LogRecord actual = call(RecordKind::kSetWriteHighWater);
  actual.id = socket;
  actual.value[0] = bytes;
  match(actual);
}

void rewrite_outside_state(Reactor& reactor, const LogRecord& record) {
  const std::vector<std::int64_t>& n = record.numbers;
  auto& timers = ReactorAccess::saved_timers(reactor);
  auto& sockets = ReactorAccess::saved_sockets(reactor);
  // As record_timers and record_sockets do: cleared, then filled in order.
  timers.clear();
  const auto count = static_cast<std::size_t>(n[0]);
  for (std::size_t i = 0; i < count; ++i) {
    timers.push_back(ReactorAccess::SavedTimer{static_cast<TimerId>(n[1 + 3 * i]), n[2 + 3 * i], n[3 + 3 * i]});
  }
  sockets.clear();
  for (std::size_t i = 2 + 3 * count; i < n.size(); ++i) sockets.push_back(static_cast<SocketId>(n[i]));
  timers.clear();
  sockets.clear();
}

}  // namespace reheap::detail::replay
