// LogReader (see reheap/recording_log.h, RECORDING_FORMAT.md).
#include <algorithm>
#include <iterator>
#include <limits>

#include "recording/log_codec.h"
#include "recording/recording_file.h"
#include "reheap/chunk_placement.h"
#include "reheap/recording_log.h"

namespace reheap {

using detail::recording::load_fixed;
using detail::recording::unzigzag;

namespace {

constexpr std::size_t kFixedHeaderBytes = 8 + 4 + 4 + 8 * 4 + 2;

// A segment is read whole, bounded by its size only (a replay holds its whole log anyway); a FIFO,
// a directory or a link to /dev/zero under a segment's name is refused by its type, and a file
// without the magic number costs one chunk (recording_file.h).
std::vector<unsigned char> read_whole(const std::filesystem::path& file) {
  return detail::recording::read_recording_file(
      file, {"a recording log", std::numeric_limits<std::uint64_t>::max(), detail::recording::kFileMagic});
}

// The log segments of a directory, in event order (by the number in log-<first event>.rlog).
std::vector<std::filesystem::path> segments_of(const std::filesystem::path& dir) {
  std::vector<std::pair<std::uint64_t, std::filesystem::path>> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 10 || name.rfind("log-", 0) != 0 || entry.path().extension() != ".rlog") continue;
    try {
      found.emplace_back(std::stoull(name.substr(4)), entry.path());
    } catch (const std::exception&) {
      // Not one of ours (log-x.rlog): ignored like any other file.
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<std::filesystem::path> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  if (out.empty()) throw RecordingError(RecordingErrc::kNotARecording, dir, 0, "no log-*.rlog segment in the directory");
  return out;
}

}  // namespace

struct LogReader::State {
  std::vector<std::filesystem::path> files;
  bool in_memory = false;  // `bytes` holds the one file already
  std::size_t next_file = 0;
  std::filesystem::path file;  // being read
  std::vector<unsigned char> bytes;
  LogHeader first_header;
  LogHeader header;
  std::size_t offset = 0;       // of the next block, in `bytes`
  std::size_t block_offset = 0; // of the current block
  std::size_t body_end = 0;     // the current block's end; records are read while at < body_end
  std::size_t at = 0;
  std::uint32_t records_left = 0;
  bool block_continues = false; // the block entered last ends inside an event (version 3 on)
  bool ended = false;           // next() returned false: `end` says how
  LogReader::End end;
  std::uint64_t event = 0;      // of the last record read
  std::vector<std::uint64_t> refs;
  std::vector<std::pair<std::uint64_t, Encoding>> types;

  [[noreturn]] void fail(RecordingErrc code, const std::string& what) const {
    throw RecordingError(code, file, event, what);
  }
  [[noreturn]] void corrupt(const std::string& what) const {
    fail(RecordingErrc::kCorrupt, "block at offset " + std::to_string(block_offset) + " (event " +
                                      std::to_string(event) + "): " + what);
  }

  LogHeader parse_header() {
    if (bytes.size() < 8 || !std::equal(std::begin(detail::recording::kFileMagic),
                                        std::end(detail::recording::kFileMagic), bytes.begin())) {
      fail(RecordingErrc::kNotARecording, "not a reheap recording log (no RHEAPLOG magic)");
    }
    if (bytes.size() < kFixedHeaderBytes) fail(RecordingErrc::kTruncated, "the file header is cut short");
    const std::uint32_t version = load_fixed<std::uint32_t>(bytes.data() + 8);
    if (version < kOldestRecordingFormatVersion || version > kRecordingFormatVersion) {
      fail(RecordingErrc::kVersion, "recording format version " + std::to_string(version) +
                                        ", this reader knows versions " +
                                        std::to_string(kOldestRecordingFormatVersion) + " to " +
                                        std::to_string(kRecordingFormatVersion));
    }
    const std::uint32_t length = load_fixed<std::uint32_t>(bytes.data() + 12);
    if (length < kFixedHeaderBytes + 8 || length > 8 + 65536 + kFixedHeaderBytes) fail(RecordingErrc::kCorrupt, "bad header length");
    if (bytes.size() < length) fail(RecordingErrc::kTruncated, "the file header is cut short");
    if (detail::recording::checksum64(bytes.data(), length - 8) != load_fixed<std::uint64_t>(bytes.data() + length - 8)) {
      fail(RecordingErrc::kCorrupt, "the file header's checksum does not match");
    }
    LogHeader h;
    h.version = version;
    h.recording_id = load_fixed<std::uint64_t>(bytes.data() + 16);
    h.actor = ActorRef(load_fixed<std::uint64_t>(bytes.data() + 24));
    h.events_before = load_fixed<std::uint64_t>(bytes.data() + 32);
    h.created_unix_ns = load_fixed<std::uint64_t>(bytes.data() + 40);
    const std::uint16_t id_length = load_fixed<std::uint16_t>(bytes.data() + 48);
    if (kFixedHeaderBytes + id_length + 8 != length) fail(RecordingErrc::kCorrupt, "bad header length");
    h.build_id.assign(bytes.begin() + static_cast<std::ptrdiff_t>(kFixedHeaderBytes),
                      bytes.begin() + static_cast<std::ptrdiff_t>(kFixedHeaderBytes + id_length));
    offset = length;
    return h;
  }

  bool last_file() const noexcept { return next_file == files.size(); }

  void open(std::size_t index) {
    file = files[index];
    if (!in_memory) bytes = read_whole(file);
    LogHeader h = parse_header();
    if (index == 0) {
      first_header = h;
    } else {
      if (h.recording_id != first_header.recording_id || h.actor != first_header.actor) {
        fail(RecordingErrc::kMismatch, "a segment of another recording (id " + std::to_string(h.recording_id) +
                                           ", expected " + std::to_string(first_header.recording_id) + ")");
      }
      if (h.version != first_header.version) {
        fail(RecordingErrc::kMismatch, "a segment of format version " + std::to_string(h.version) +
                                           " after one of version " + std::to_string(first_header.version));
      }
      if (h.events_before != event) {
        fail(RecordingErrc::kMismatch, "the segment starts after event " + std::to_string(h.events_before) +
                                           " but the previous one ends at event " + std::to_string(event));
      }
    }
    header = h;
    event = h.events_before;
    records_left = 0;
    block_continues = false;
    next_file = index + 1;
  }

  // A block cut short by the end of the file: the end of the log if this is its last segment (a
  // process killed while it wrote), else damage.
  bool torn_block(const std::string& what) {
    const std::string where = "the log ends after event " + std::to_string(event) + ": " + what;
    if (!last_file()) fail(RecordingErrc::kTruncated, where);
    end.torn = true;
    end.note = file.string() + ": " + where + " (" + std::to_string(bytes.size() - offset) +
               " bytes left out, as a process killed while writing leaves them)";
    offset = bytes.size();
    return false;
  }

  // Enters the next block; false at the end of the file.
  bool enter_block() {
    if (offset == bytes.size()) return false;
    block_offset = offset;
    if (bytes.size() - offset < detail::recording::kBlockHeaderBytes) {
      return torn_block("a torn block header at offset " + std::to_string(offset));
    }
    const unsigned char* h = bytes.data() + offset;
    if (load_fixed<std::uint32_t>(h) != detail::recording::kBlockMagic) corrupt("no block magic");
    const std::uint64_t before = load_fixed<std::uint64_t>(h + 4);
    std::uint32_t records = load_fixed<std::uint32_t>(h + 12);
    const std::uint32_t length = load_fixed<std::uint32_t>(h + 16);
    const std::uint64_t sum = load_fixed<std::uint64_t>(h + 20);
    bool continues = false;
    if (header.version >= 3) {
      continues = (records & detail::recording::kBlockContinues) != 0;
      records &= detail::recording::kBlockRecordsMask;
    }
    if (length > detail::recording::kMaxBlockBody || records == 0) corrupt("implausible block header");
    const std::size_t body = offset + detail::recording::kBlockHeaderBytes;
    if (bytes.size() - body < length) {
      return torn_block("the block at offset " + std::to_string(offset) + " is cut short");
    }
    if (detail::recording::checksum64(bytes.data() + body, length) != sum) corrupt("checksum mismatch");
    if (before != event) {
      corrupt("the block follows event " + std::to_string(before) + ", the log is at event " + std::to_string(event));
    }
    at = body;
    body_end = body + length;
    offset = body_end;
    records_left = records;
    block_continues = continues;
    refs.clear();
    types.clear();
    return true;
  }

  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at >= body_end) corrupt("a record runs past its block");
      const unsigned char b = bytes[at++];
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    corrupt("a varint longer than 64 bits");
  }
  std::uint8_t byte() {
    if (at >= body_end) corrupt("a record runs past its block");
    return bytes[at++];
  }
  std::uint64_t fixed64() {
    if (body_end - at < 8) corrupt("a record runs past its block");
    const std::uint64_t v = load_fixed<std::uint64_t>(bytes.data() + at);
    at += 8;
    return v;
  }
  void string(std::string& out, std::uint64_t length) {
    if (length > body_end - at) corrupt("a record runs past its block");
    out.assign(reinterpret_cast<const char*>(bytes.data() + at), length);
    at += length;
  }
  void string(std::string& out) { string(out, varint()); }

  ActorRef ref() {
    const std::uint64_t index = varint();
    if (index == refs.size()) refs.push_back(varint());
    if (index >= refs.size()) corrupt("a sender index past the block's dictionary");
    return ActorRef(refs[index]);
  }
  void type(LogRecord& r) {
    const std::uint64_t index = varint();
    if (index == types.size()) {
      const std::uint64_t id = varint();
      const std::uint8_t encoding = byte();
      if (encoding > static_cast<std::uint8_t>(Encoding::kSystem)) corrupt("unknown encoding");
      types.emplace_back(id, static_cast<Encoding>(encoding));
    }
    if (index >= types.size()) corrupt("a type index past the block's dictionary");
    r.type_id = types[index].first;
    r.encoding = types[index].second;
  }
  void error(LogRecord& r) {
    const std::uint8_t category = byte();
    if (category > static_cast<std::uint8_t>(ErrorCategory::kSystem)) corrupt("unknown error category");
    r.error_category = static_cast<ErrorCategory>(category);
    if (r.error_category != ErrorCategory::kNone) r.error_value = static_cast<int>(unzigzag(varint()));
  }
  void payload(LogRecord& r) {
    r.length = varint();
    const std::uint8_t flags = byte();
    r.has_digest = (flags & detail::recording::kHasDigest) != 0;
    r.has_bytes = (flags & detail::recording::kHasBytes) != 0;
    if (r.has_digest) r.digest = fixed64();
    if (r.has_bytes) string(r.bytes, r.length);
  }

  void decode(LogRecord& r) {
    r.clear();
    const std::uint8_t kind = byte();
    r.kind = static_cast<RecordKind>(kind);
    if (is_input(r.kind)) ++event;
    switch (r.kind) {
      case RecordKind::kStart:
      case RecordKind::kRestored:
      case RecordKind::kStop:
      case RecordKind::kStopCall:
        return;
      case RecordKind::kMessage:
        r.ref = ref();
        type(r);
        string(r.bytes);
        r.length = r.bytes.size();
        r.has_bytes = true;
        return;
      case RecordKind::kCorrelatedMessage:
        // Read as the message it is, with its exchange and id (version 4 on).
        if (header.version < 4) break;
        r.kind = RecordKind::kMessage;
        r.ref = ref();
        type(r);
        r.result = byte();
        if (r.result != 1 && r.result != 2) corrupt("a correlated message neither request nor reply");
        r.id = varint();
        if (r.id == 0) corrupt("a correlated message of request id 0");
        string(r.bytes);
        r.length = r.bytes.size();
        r.has_bytes = true;
        return;
      case RecordKind::kTimer:
      case RecordKind::kTimerCancel:
      case RecordKind::kClose:
      case RecordKind::kEnd:
      case RecordKind::kDrained:
        r.id = varint();
        return;
      case RecordKind::kAccept:
        r.id = varint();
        r.connection = varint();
        return;
      case RecordKind::kConnect:
      case RecordKind::kClosed:
      case RecordKind::kAcceptError:
        r.id = varint();
        error(r);
        return;
      case RecordKind::kData:
        r.id = varint();
        string(r.bytes);
        r.length = r.bytes.size();
        r.has_bytes = true;
        return;
      case RecordKind::kSystemNow:
      case RecordKind::kSteadyNow:
      case RecordKind::kWorker:
        r.value[0] = static_cast<std::uint64_t>(unzigzag(varint()));
        return;
      case RecordKind::kSeed:
        r.value[0] = fixed64();
        r.value[1] = fixed64();
        return;
      case RecordKind::kSend:
        r.ref = ref();
        type(r);
        payload(r);
        r.result = byte();
        return;
      case RecordKind::kSpawn:
        string(r.text);
        r.ref = ActorRef(varint());
        string(r.detail);
        return;
      case RecordKind::kRequestSnapshot:
        r.id = varint();
        r.ref = ref();
        r.value[0] = varint();
        return;
      case RecordKind::kTimerStart:
        r.id = varint();
        r.value[0] = static_cast<std::uint64_t>(unzigzag(varint()));
        r.value[1] = static_cast<std::uint64_t>(unzigzag(varint()));
        return;
      case RecordKind::kListen:
      case RecordKind::kConnectCall:
        string(r.text);
        r.port = static_cast<std::uint16_t>(varint());
        r.id = varint();
        string(r.detail);
        return;
      case RecordKind::kLocalPort:
        r.id = varint();
        r.port = static_cast<std::uint16_t>(varint());
        return;
      case RecordKind::kWrite:
        r.id = varint();
        payload(r);
        r.result = byte();
        return;
      case RecordKind::kSetNoDelay:
      case RecordKind::kSetReading:
        r.id = varint();
        r.value[0] = byte();
        return;
      case RecordKind::kSetWriteHighWater:
        r.id = varint();
        r.value[0] = varint();
        return;
      case RecordKind::kChunk:
        if (header.version < 2) break;  // unknown before version 2
        r.result = byte();
        if (r.result > static_cast<std::uint8_t>(ChunkHalf::kLarge)) corrupt("a chunk record of no zone half");
        r.id = varint();
        r.value[0] = varint();
        if (r.value[0] == 0) corrupt("a chunk record of no chunks");
        return;
      case RecordKind::kOutsideState: {
        if (header.version < 3) break;  // unknown before version 3
        const std::uint64_t count = varint();
        // Each number takes a byte at least: a count past the block's end is damage, not memory to reserve.
        if (count > body_end - at) corrupt("an outside_state record longer than its block");
        r.numbers.reserve(count);
        for (std::uint64_t i = 0; i < count; ++i) r.numbers.push_back(unzigzag(varint()));
        return;
      }
      case RecordKind::kStateHash:
        r.digest = fixed64();
        return;
      case RecordKind::kEventFailed:
        string(r.text);
        string(r.detail);
        return;
    }
    corrupt("unknown record kind " + std::to_string(kind));
  }
};

LogReader::LogReader(const std::filesystem::path& file_or_directory) : state_(std::make_unique<State>()) {
  std::error_code ec;
  if (std::filesystem::is_directory(file_or_directory, ec)) {
    state_->files = segments_of(file_or_directory);
  } else {
    state_->files.push_back(file_or_directory);
  }
  state_->open(0);
}

LogReader::LogReader(std::vector<unsigned char> bytes, std::filesystem::path name)
    : state_(std::make_unique<State>()) {
  state_->files.push_back(std::move(name));
  state_->in_memory = true;
  state_->bytes = std::move(bytes);
  state_->open(0);
}

LogReader::~LogReader() = default;

const LogHeader& LogReader::header() const noexcept { return state_->first_header; }
std::uint64_t LogReader::position() const noexcept { return state_->event; }
const LogReader::End& LogReader::end() const noexcept { return state_->end; }

bool LogReader::next(LogRecord& record) {
  State& s = *state_;
  if (s.ended) return false;
  while (s.records_left == 0) {
    if (s.enter_block()) break;
    if (s.last_file()) {
      // The last block read ended inside an event whose next block was never written: that event
      // is not whole, though its first records were handed out.
      s.ended = true;
      s.end.event_cut = s.block_continues;
      s.end.last_whole_event = s.event - (s.block_continues ? 1 : 0);
      if (s.block_continues) {
        const std::string cut = s.file.string() + ": event " + std::to_string(s.event) +
                                " is cut: its last block goes on in one that was never written";
        s.end.note = s.end.note.empty() ? cut : s.end.note + "; " + cut;
      }
      return false;
    }
    s.open(s.next_file);
  }
  s.decode(record);
  if (--s.records_left == 0 && s.at != s.body_end) s.corrupt("bytes after the block's last record");
  if (s.records_left != 0 && s.at == s.body_end) s.corrupt("fewer records than the block header says");
  return true;
}

}  // namespace reheap
