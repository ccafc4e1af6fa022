// Readable records (see record_text.h).
#include "replay/record_text.h"

#include <msgpack.hpp>

#include <cstdio>
#include <sstream>

namespace reheap::detail::replay {
namespace {

constexpr std::size_t kHexShown = 64;

std::string hex64(std::uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(v));
  return text;
}

std::string reference(ActorRef ref) { return ref ? "reactor " + std::to_string(ref.value()) : "the null reference"; }

const char* encoding_name(Encoding e) noexcept {
  switch (e) {
    case Encoding::kRaw:
      return "raw";
    case Encoding::kMsgpack:
      return "msgpack";
    case Encoding::kSystem:
      return "system";
  }
  return "?";
}

// A send's or a write's payload, as much as the record holds of it.
std::string payload_text(const LogRecord& r) {
  std::string out = std::to_string(r.length) + " bytes";
  if (r.has_bytes) return out + ": " + render_payload(r.encoding, r.bytes.data(), r.bytes.size());
  if (r.has_digest) return out + ", digest " + hex64(r.digest) + " (the recording kept digests, not payloads)";
  return out + " (the recording kept neither payloads nor digests)";
}

std::string failure(const LogRecord& r) { return r.detail.empty() ? "" : ", threw \"" + r.detail + "\""; }

}  // namespace

std::string render_payload(Encoding encoding, const void* data, std::size_t size) {
  if (encoding == Encoding::kMsgpack) {
    try {
      const msgpack::object_handle handle = msgpack::unpack(static_cast<const char*>(data), size);
      std::ostringstream text;
      text << handle.get();
      return text.str();
    } catch (const std::exception& e) {
      return std::string("(not valid msgpack: ") + e.what() + ")";
    }
  }
  std::string out = encoding == Encoding::kRaw ? "raw bytes " : "system message bytes ";
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size && i < kHexShown; ++i) {
    char pair[4];
    std::snprintf(pair, sizeof pair, "%02x", bytes[i]);
    out += pair;
  }
  if (size > kHexShown) out += "...";
  return out;
}

std::string type_text(std::uint64_t type_id) {
  const std::string name = reheap::detail::message_type_name_of(type_id);
  return hex64(type_id) + (name.empty() ? "" : " (" + name + ")");
}

std::string describe_record(const LogRecord& r, bool with_answer) {
  switch (r.kind) {
    case RecordKind::kSystemNow:
      return "now()" + (with_answer ? " = " + std::to_string(static_cast<std::int64_t>(r.value[0])) + " ns" : "");
    case RecordKind::kSteadyNow:
      return "steady_now()" +
             (with_answer ? " = " + std::to_string(static_cast<std::int64_t>(r.value[0])) + " ns" : "");
    case RecordKind::kSeed:
      return "a random seed (the first random())";
    case RecordKind::kWorker:
      return "worker()";
    case RecordKind::kSend:
      return "send to " + reference(r.ref) + ": type " + type_text(r.type_id) + ", " + encoding_name(r.encoding) +
             ", " + payload_text(r) +
             (with_answer ? std::string(" -> ") + reheap::to_string(static_cast<SendResult>(r.result)) : "");
    case RecordKind::kSpawn:
      return "spawn(name \"" + r.text + "\")" + (with_answer ? " -> " + reference(r.ref) + failure(r) : "");
    case RecordKind::kStopCall:
      return "stop()";
    case RecordKind::kRequestSnapshot:
      return "request_snapshot(request " + std::to_string(r.id) + ", target " + reference(r.ref) + ", " +
             (r.value[0] == 0 ? "full" : "incremental") + ")";
    case RecordKind::kTimerStart:
      return "start_timer(timer " + std::to_string(r.id) + ", delay " +
             std::to_string(static_cast<std::int64_t>(r.value[0])) + " ns, period " +
             std::to_string(static_cast<std::int64_t>(r.value[1])) + " ns)";
    case RecordKind::kTimerCancel:
      return "cancel_timer(timer " + std::to_string(r.id) + ")";
    case RecordKind::kListen:
    case RecordKind::kConnectCall:
      return std::string(r.kind == RecordKind::kListen ? "listen(" : "connect(") + r.text + ", port " +
             std::to_string(r.port) + ")" + (with_answer ? " -> socket " + std::to_string(r.id) + failure(r) : "");
    case RecordKind::kLocalPort:
      return "local_port(socket " + std::to_string(r.id) + ")" + (with_answer ? " = " + std::to_string(r.port) : "");
    case RecordKind::kWrite:
      return "write(socket " + std::to_string(r.id) + ", " + payload_text(r) + ")" +
             (with_answer ? ((r.result & 1) != 0 ? ((r.result & 2) != 0 ? " -> written, above the high-water mark" : " -> written")
                                                 : " -> refused")
                          : "");
    case RecordKind::kClose:
      return "close(socket " + std::to_string(r.id) + ")";
    case RecordKind::kSetNoDelay:
      return "set_no_delay(socket " + std::to_string(r.id) + (r.value[0] != 0 ? ", on)" : ", off)");
    case RecordKind::kSetReading:
      return std::string(r.value[0] != 0 ? "resume_reading" : "pause_reading") + "(socket " + std::to_string(r.id) + ")";
    case RecordKind::kSetWriteHighWater:
      return "set_write_high_water(socket " + std::to_string(r.id) + ", " + std::to_string(r.value[0]) + " bytes)";
    default:
      return to_string(r.kind);
  }
}

}  // namespace reheap::detail::replay
