// LogWriter and the log's header (see reheap/recording_log.h, RECORDING_FORMAT.md).
// The state type of XXH3's streaming functions is only complete with this (seal_with).
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>

#include "recording/log_codec.h"
#include "reheap/program_layout.h"
#include "reheap/recording_log.h"

namespace reheap {

using detail::recording::put_fixed;
using detail::recording::put_string;
using detail::recording::put_varint;
using detail::recording::zigzag;

namespace detail::recording {
std::uint64_t checksum64(const void* data, std::size_t size) noexcept { return XXH3_64bits(data, size); }
}  // namespace detail::recording

void LogRecord::clear() noexcept {
  kind = RecordKind::kStart;
  ref = ActorRef{};
  type_id = 0;
  encoding = Encoding::kRaw;
  id = 0;
  connection = 0;
  value[0] = value[1] = 0;
  port = 0;
  error_category = ErrorCategory::kNone;
  error_value = 0;
  result = 0;
  length = 0;
  has_digest = false;
  digest = 0;
  has_bytes = false;
  bytes.clear();
  text.clear();
  detail.clear();
  numbers.clear();
}

RecordingError::RecordingError(RecordingErrc code, std::filesystem::path file, std::uint64_t event,
                               const std::string& what)
    : std::runtime_error(file.string() + ": " + what), code_(code), file_(std::move(file)), event_(event) {}

const char* to_string(RecordKind kind) noexcept {
  switch (kind) {
    case RecordKind::kStart: return "start";
    case RecordKind::kRestored: return "restored";
    case RecordKind::kMessage: return "message";
    case RecordKind::kCorrelatedMessage: return "correlated_message";
    case RecordKind::kTimer: return "timer";
    case RecordKind::kAccept: return "accept";
    case RecordKind::kConnect: return "connect";
    case RecordKind::kData: return "data";
    case RecordKind::kClosed: return "closed";
    case RecordKind::kStop: return "stop";
    case RecordKind::kEnd: return "end";
    case RecordKind::kDrained: return "drained";
    case RecordKind::kAcceptError: return "accept_error";
    case RecordKind::kSystemNow: return "system_now";
    case RecordKind::kSteadyNow: return "steady_now";
    case RecordKind::kSeed: return "seed";
    case RecordKind::kSend: return "send";
    case RecordKind::kSpawn: return "spawn";
    case RecordKind::kStopCall: return "stop_call";
    case RecordKind::kRequestSnapshot: return "request_snapshot";
    case RecordKind::kTimerStart: return "timer_start";
    case RecordKind::kTimerCancel: return "timer_cancel";
    case RecordKind::kListen: return "listen";
    case RecordKind::kConnectCall: return "connect_call";
    case RecordKind::kLocalPort: return "local_port";
    case RecordKind::kWrite: return "write";
    case RecordKind::kClose: return "close";
    case RecordKind::kSetNoDelay: return "set_no_delay";
    case RecordKind::kWorker: return "worker";
    case RecordKind::kSetReading: return "set_reading";
    case RecordKind::kSetWriteHighWater: return "set_write_high_water";
    case RecordKind::kChunk: return "chunk";
    case RecordKind::kOutsideState: return "outside_state";
    case RecordKind::kStateHash: return "state_hash";
    case RecordKind::kEventFailed: return "event_failed";
  }
  return "unknown";
}

std::vector<unsigned char> encode_log_header(const LogHeader& header) {
  std::vector<unsigned char> out(std::begin(detail::recording::kFileMagic),
                                 std::end(detail::recording::kFileMagic));
  put_fixed<std::uint32_t>(out, header.version);
  const std::size_t length_at = out.size();
  put_fixed<std::uint32_t>(out, 0);  // the header's length, checksum included: filled in below
  put_fixed<std::uint64_t>(out, header.recording_id);
  put_fixed<std::uint64_t>(out, header.actor.value());
  put_fixed<std::uint64_t>(out, header.events_before);
  put_fixed<std::uint64_t>(out, header.created_unix_ns);
  put_fixed<std::uint16_t>(out, static_cast<std::uint16_t>(header.build_id.size()));
  out.insert(out.end(), header.build_id.begin(), header.build_id.end());
  detail::recording::store_fixed<std::uint32_t>(out.data() + length_at,
                                                static_cast<std::uint32_t>(out.size() + 8));
  put_fixed<std::uint64_t>(out, detail::recording::checksum64(out.data(), out.size()));
  return out;
}

const std::string& program_build_id() {
  static const std::string id = [] {
    for (const LoadedObject& o : current_program_layout()) {
      if (o.main_executable) return o.build_id;
    }
    return std::string();
  }();
  return id;
}

void LogWriter::restart(std::uint64_t events_before) noexcept {
  events_ = events_before;
  block_events_before_ = events_before;
  records_ = 0;
  open_event_ = false;
  body_.clear();
  refs_.clear();
  types_.clear();
  committed_event_.store(events_before, std::memory_order_relaxed);
  committed_.store(0, std::memory_order_release);
}

void LogWriter::reserve_room(std::size_t bytes) {
  if (room() >= bytes) return;
  // At least double: appends then move the buffer O(log n) times, not once per record.
  body_.reserve(std::max(body_.size() + bytes, 2 * body_.capacity()));
}

LogWriter::Committed LogWriter::committed() const noexcept {
  const std::uint64_t packed = committed_.load(std::memory_order_acquire);
  Committed c;
  c.records = static_cast<std::uint32_t>(packed);
  c.last_event = committed_event_.load(std::memory_order_relaxed);
  if (c.records == 0) return c;
  c.events_before = block_events_before_;
  c.body = std::span<const unsigned char>(body_.data(), static_cast<std::size_t>(packed >> 32));
  return c;
}

void LogWriter::Body::reserve(std::size_t bytes) {
  if (bytes <= capacity_) return;
  std::unique_ptr<unsigned char[]> moved(new unsigned char[bytes]);
  if (size_ != 0) std::memcpy(moved.get(), bytes_.get(), size_);
  bytes_ = std::move(moved);
  capacity_ = bytes;
}

void LogWriter::Body::append(const unsigned char* data, std::size_t n) {
  if (capacity_ - size_ < n) reserve(std::max(size_ + n, 2 * capacity_));
  if (n != 0) std::memcpy(bytes_.get() + size_, data, n);
  size_ += n;
}

std::size_t LogWriter::find_ref(ActorRef ref) noexcept {
  if (last_ref_ < refs_.size() && refs_[last_ref_] == ref.value()) return last_ref_;
  for (std::size_t i = 0; i < refs_.size(); ++i) {
    if (refs_[i] == ref.value()) return last_ref_ = i;
  }
  return refs_.size();
}

std::size_t LogWriter::find_type(std::uint64_t type_id, Encoding encoding) noexcept {
  if (last_type_ < types_.size() && types_[last_type_].first == type_id && types_[last_type_].second == encoding) {
    return last_type_;
  }
  for (std::size_t i = 0; i < types_.size(); ++i) {
    if (types_[i].first == type_id && types_[i].second == encoding) return last_type_ = i;
  }
  return types_.size();
}

std::uint64_t LogWriter::ref_index(ActorRef ref) {
  const std::size_t i = find_ref(ref);
  if (i == refs_.size()) refs_.push_back(ref.value());
  return last_ref_ = i;
}

std::uint64_t LogWriter::type_index(std::uint64_t type_id, Encoding encoding) {
  const std::size_t i = find_type(type_id, encoding);
  if (i == types_.size()) types_.emplace_back(type_id, encoding);
  return last_type_ = i;
}

namespace {

// A dictionary entry: its index, followed by the value when the index is new (= the entries
// so far), so that the reader builds the same dictionary as it goes.
void put_ref(std::vector<unsigned char>& out, std::uint64_t index, std::size_t known_before, ActorRef ref) {
  put_varint(out, index);
  if (index == known_before) put_varint(out, ref.value());
}

void put_error(std::vector<unsigned char>& out, const LogRecord& r) {
  out.push_back(static_cast<unsigned char>(r.error_category));
  if (r.error_category != ErrorCategory::kNone) put_varint(out, zigzag(r.error_value));
}

// The fixed-size fields of a message or send record (all but the payload bytes), encoded on the
// stack: their longest form (new dictionary entries, 10-byte varints, a digest) fits.
class FieldBuffer {
 public:
  void byte(std::uint8_t v) noexcept { bytes_[size_++] = v; }
  void varint(std::uint64_t v) noexcept {
    while (v >= 0x80) {
      bytes_[size_++] = static_cast<unsigned char>(v | 0x80);
      v >>= 7;
    }
    bytes_[size_++] = static_cast<unsigned char>(v);
  }
  // put_ref's and the type dictionary's encoding.
  void ref(std::uint64_t index, std::size_t known_before, ActorRef ref) noexcept {
    varint(index);
    if (index == known_before) varint(ref.value());
  }
  void type(std::uint64_t index, std::size_t known_before, std::uint64_t type_id, Encoding encoding) noexcept {
    varint(index);
    if (index == known_before) {
      varint(type_id);
      byte(static_cast<std::uint8_t>(encoding));
    }
  }
  // put_payload's encoding without the bytes, which follow it.
  void payload_head(const LogRecord& r) noexcept {
    varint(r.length);
    byte((r.has_digest ? detail::recording::kHasDigest : 0) | (r.has_bytes ? detail::recording::kHasBytes : 0));
    if (r.has_digest) {
      detail::recording::store_fixed<std::uint64_t>(bytes_ + size_, r.digest);
      size_ += 8;
    }
  }
  // Appends the fields, then `size` bytes at `data`.
  void append_to(std::vector<unsigned char>& out, const char* data, std::size_t size) {
    out.insert(out.end(), bytes_, bytes_ + size_);
    if (size != 0) out.insert(out.end(), data, data + size);
  }

 private:
  // kind excluded: ref 2 varints, type 2 varints and a byte, length varint, flags, digest,
  // result.
  unsigned char bytes_[5 * 10 + 1 + 1 + 8 + 1 + 1 + 10];
  std::size_t size_ = 0;
};

void put_payload(std::vector<unsigned char>& out, const LogRecord& r) {
  put_varint(out, r.length);
  const std::uint8_t flags = (r.has_digest ? detail::recording::kHasDigest : 0) |
                             (r.has_bytes ? detail::recording::kHasBytes : 0);
  out.push_back(flags);
  if (r.has_digest) put_fixed<std::uint64_t>(out, r.digest);
  if (r.has_bytes) out.insert(out.end(), r.bytes.begin(), r.bytes.end());
}

}  // namespace

void LogWriter::append(const LogRecord& r) {
  // Encoded aside, then appended whole: the body never holds half a record (Body).
  std::vector<unsigned char>& out = encoding_;
  out.clear();
  // Cleared on the way out, by an exception too (which leaves the block as it is: see flush()).
  struct Appending {
    bool& flag;
    explicit Appending(bool& f) noexcept : flag(f) { flag = true; }
    ~Appending() { flag = false; }
  } appending(appending_);
  if (records_ == 0) block_events_before_ = events_;
  // A message of a request/reply exchange goes out as its own kind, with its id (version 4 on);
  // a plain message keeps the old kind and costs nothing more.
  const bool correlated = r.kind == RecordKind::kMessage && r.result != 0;
  out.push_back(static_cast<unsigned char>(correlated ? RecordKind::kCorrelatedMessage : r.kind));
  switch (r.kind) {
    case RecordKind::kStart:
    case RecordKind::kRestored:
    case RecordKind::kStop:
    case RecordKind::kStopCall:
      break;
    case RecordKind::kMessage: {
      // The commonest record: its fields are encoded on the stack and appended in one go, with
      // the payload, rather than byte by byte (the bytes are the same).
      FieldBuffer f;
      const std::size_t refs = refs_.size();
      f.ref(ref_index(r.ref), refs, r.ref);
      const std::size_t types = types_.size();
      f.type(type_index(r.type_id, r.encoding), types, r.type_id, r.encoding);
      if (correlated) {
        f.byte(r.result);
        f.varint(r.id);
      }
      f.varint(r.bytes.size());
      f.append_to(out, r.bytes.data(), r.bytes.size());
      break;
    }
    case RecordKind::kCorrelatedMessage:  // written from a kMessage record with `result` set
      break;
    case RecordKind::kTimer:
    case RecordKind::kTimerCancel:
    case RecordKind::kClose:
    case RecordKind::kEnd:
    case RecordKind::kDrained:
      put_varint(out, r.id);
      break;
    case RecordKind::kAccept:
      put_varint(out, r.id);
      put_varint(out, r.connection);
      break;
    case RecordKind::kConnect:
    case RecordKind::kClosed:
    case RecordKind::kAcceptError:
      put_varint(out, r.id);
      put_error(out, r);
      break;
    case RecordKind::kData:
      put_varint(out, r.id);
      put_varint(out, r.bytes.size());
      out.insert(out.end(), r.bytes.begin(), r.bytes.end());
      break;
    case RecordKind::kSystemNow:
    case RecordKind::kSteadyNow:
    case RecordKind::kWorker:
      put_varint(out, zigzag(static_cast<std::int64_t>(r.value[0])));
      break;
    case RecordKind::kSeed:
      put_fixed<std::uint64_t>(out, r.value[0]);
      put_fixed<std::uint64_t>(out, r.value[1]);
      break;
    case RecordKind::kSend: {
      FieldBuffer f;
      const std::size_t refs = refs_.size();
      f.ref(ref_index(r.ref), refs, r.ref);
      const std::size_t types = types_.size();
      f.type(type_index(r.type_id, r.encoding), types, r.type_id, r.encoding);
      if (r.has_bytes) {
        f.payload_head(r);
        f.append_to(out, r.bytes.data(), r.bytes.size());
        out.push_back(r.result);
      } else {
        f.payload_head(r);
        f.byte(r.result);
        f.append_to(out, nullptr, 0);
      }
      break;
    }
    case RecordKind::kSpawn:
      put_string(out, r.text);
      put_varint(out, r.ref.value());
      put_string(out, r.detail);
      break;
    case RecordKind::kRequestSnapshot: {
      put_varint(out, r.id);
      const std::size_t refs = refs_.size();
      put_ref(out, ref_index(r.ref), refs, r.ref);
      put_varint(out, r.value[0]);
      break;
    }
    case RecordKind::kTimerStart:
      put_varint(out, r.id);
      put_varint(out, zigzag(static_cast<std::int64_t>(r.value[0])));
      put_varint(out, zigzag(static_cast<std::int64_t>(r.value[1])));
      break;
    case RecordKind::kListen:
    case RecordKind::kConnectCall:
      put_string(out, r.text);
      put_varint(out, r.port);
      put_varint(out, r.id);
      put_string(out, r.detail);
      break;
    case RecordKind::kLocalPort:
      put_varint(out, r.id);
      put_varint(out, r.port);
      break;
    case RecordKind::kWrite:
      put_varint(out, r.id);
      put_payload(out, r);
      out.push_back(r.result);
      break;
    case RecordKind::kSetNoDelay:
    case RecordKind::kSetReading:
      put_varint(out, r.id);
      out.push_back(r.value[0] != 0 ? 1 : 0);
      break;
    case RecordKind::kSetWriteHighWater:
      put_varint(out, r.id);
      put_varint(out, r.value[0]);
      break;
    case RecordKind::kChunk:
      out.push_back(r.result);
      put_varint(out, r.id);
      put_varint(out, r.value[0]);
      break;
    case RecordKind::kOutsideState:
      put_varint(out, r.numbers.size());
      for (const std::int64_t n : r.numbers) put_varint(out, zigzag(n));
      break;
    case RecordKind::kStateHash:
      put_fixed<std::uint64_t>(out, r.digest);
      break;
    case RecordKind::kEventFailed:
      put_string(out, r.text);
      put_string(out, r.detail);
      break;
  }
  body_.append(out.data(), out.size());
  ++records_;
  if (is_input(r.kind)) {
    ++events_;
    open_event_ = true;
  }
}

bool LogWriter::append_message(ActorRef sender, std::uint64_t type_id, Encoding encoding, std::uint8_t exchange,
                               std::uint64_t correlation, const void* payload, std::size_t size) noexcept {
  if (room() < kFastRecordBound + size) [[unlikely]] return false;
  using detail::recording::store_varint;
  if (records_ == 0) block_events_before_ = events_;
  // append()'s kMessage / kCorrelatedMessage encoding, byte for byte. A new sender or type joins
  // its dictionary only when it has the room (no allocation here), and only once nothing can
  // send the record to append() any more, which would then take it for a known one.
  const std::size_t refs = refs_.size();
  const std::size_t ref = find_ref(sender);
  const std::size_t types = types_.size();
  const std::size_t type = find_type(type_id, encoding);
  if ((ref == refs && refs == refs_.capacity()) || (type == types && types == types_.capacity())) [[unlikely]] {
    return false;
  }
  if (ref == refs) refs_.push_back(sender.value());
  if (type == types) types_.emplace_back(type_id, encoding);
  last_ref_ = ref;
  last_type_ = type;
  unsigned char* at = body_.end();
  std::size_t n = 0;
  at[n++] = static_cast<unsigned char>(exchange != 0 ? RecordKind::kCorrelatedMessage : RecordKind::kMessage);
  n += store_varint(at + n, ref);
  if (ref == refs) n += store_varint(at + n, sender.value());
  n += store_varint(at + n, type);
  if (type == types) {
    n += store_varint(at + n, type_id);
    at[n++] = static_cast<unsigned char>(encoding);
  }
  if (exchange != 0) {
    at[n++] = exchange;
    n += store_varint(at + n, correlation);
  }
  n += store_varint(at + n, size);
  if (size != 0) std::memcpy(at + n, payload, size);
  n += size;
  // Counted once whole, and marked as under way until the counts agree with the body, so that a
  // signal's handler on this thread (seal_with) never reads half a record or a stale count.
  appending_ = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  body_.count(n);
  ++records_;
  ++events_;
  open_event_ = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  appending_ = false;
  return true;
}

bool LogWriter::append_send(ActorRef to, std::uint64_t type_id, Encoding encoding, std::size_t length,
                            bool has_digest, std::uint64_t digest, std::uint8_t result) noexcept {
  if (room() < kFastRecordBound) [[unlikely]] return false;
  using detail::recording::store_varint;
  // As append_message: the dictionaries first, with no allocation.
  const std::size_t refs = refs_.size();
  const std::size_t ref = find_ref(to);
  const std::size_t types = types_.size();
  const std::size_t type = find_type(type_id, encoding);
  if ((ref == refs && refs == refs_.capacity()) || (type == types && types == types_.capacity())) [[unlikely]] {
    return false;
  }
  if (ref == refs) refs_.push_back(to.value());
  if (type == types) types_.emplace_back(type_id, encoding);
  last_ref_ = ref;
  last_type_ = type;
  if (records_ == 0) block_events_before_ = events_;
  // append()'s kSend encoding without the payload's bytes, byte for byte.
  unsigned char* at = body_.end();
  std::size_t n = 0;
  at[n++] = static_cast<unsigned char>(RecordKind::kSend);
  n += store_varint(at + n, ref);
  if (ref == refs) n += store_varint(at + n, to.value());
  n += store_varint(at + n, type);
  if (type == types) {
    n += store_varint(at + n, type_id);
    at[n++] = static_cast<unsigned char>(encoding);
  }
  n += store_varint(at + n, length);
  at[n++] = has_digest ? detail::recording::kHasDigest : 0;
  if (has_digest) {
    detail::recording::store_fixed<std::uint64_t>(at + n, digest);
    n += 8;
  }
  at[n++] = result;
  appending_ = true;  // as in append_message
  std::atomic_signal_fence(std::memory_order_seq_cst);
  body_.count(n);
  ++records_;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  appending_ = false;
  return true;
}

void LogWriter::flush() {
  if (records_ == 0) return;
  block_.resize(detail::recording::kBlockHeaderBytes);
  // A block handed over during an event (a long one's, when full) says that the event goes on.
  const std::uint32_t count = records_ | (open_event_ ? detail::recording::kBlockContinues : 0);
  detail::recording::store_block_header(block_.data(), block_events_before_, count,
                                        static_cast<std::uint32_t>(body_.size()),
                                        detail::recording::checksum64(body_.data(), body_.size()));
  block_.insert(block_.end(), body_.data(), body_.data() + body_.size());
  const std::uint64_t before = block_events_before_;
  // The block is gone from the writer whatever the sink does: a sink that fails stays failed
  // (the recorder stops), and a half-written block must not be written twice.
  records_ = 0;
  body_.clear();
  refs_.clear();
  types_.clear();
  block_events_before_ = events_;
  committed_.store(0, std::memory_order_release);
  sink_.write_block(before, block_);
}

bool LogWriter::seal_with(std::span<const unsigned char> last, std::span<unsigned char, 28> header,
                          std::span<const unsigned char>* body) const noexcept {
  if (appending_) return false;
  static_assert(detail::recording::kBlockHeaderBytes == 28);
  // The same checksum as flush()'s over body + last, streamed: the two are not contiguous, and
  // joining them would need memory. The state lives on the (signal) stack.
  alignas(64) XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, body_.data(), body_.size());
  XXH3_64bits_update(&state, last.data(), last.size());
  detail::recording::store_block_header(header.data(), records_ == 0 ? events_ : block_events_before_,
                                        records_ + 1, static_cast<std::uint32_t>(body_.size() + last.size()),
                                        XXH3_64bits_digest(&state));
  *body = std::span<const unsigned char>(body_.data(), body_.size());
  return true;
}

std::size_t LogWriter::encode_event_failed(std::span<unsigned char> out, std::string_view hook,
                                           std::string_view what) noexcept {
  // kind, then two strings as put_string writes them, each cut to the room left.
  using detail::recording::kMaxVarintBytes;
  using detail::recording::store_string;
  std::size_t at = 0;
  out[at++] = static_cast<unsigned char>(RecordKind::kEventFailed);
  at += store_string(out.data() + at, hook.substr(0, (out.size() - 1 - 2 * kMaxVarintBytes) / 2));
  at += store_string(out.data() + at, what.substr(0, out.size() - at - kMaxVarintBytes));
  return at;
}

}  // namespace reheap
