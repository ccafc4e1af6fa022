// The recording log: a reactor's inputs and its host's answers as a sequence of records
// (RECORDING_FORMAT.md is the byte-level reference).
//
// Data model: a log is a file header (which recording, which reactor, which program, how many
// events came before it) followed by blocks. A block is a checksummed run of records that
// decodes on its own: the dictionaries that shorten senders and message types start empty in
// every block, so a damaged block costs its own records only, and the reader can name it.
// Records come in event order: one input record per event (its kind is the EventKind value),
// then the records of the answers and outputs of that event's hook, in call order (kinds >= 32).
// An event's index is the value of the reactor's event counter during it: the first event after
// a snapshot taken with n events behind it has index n + 1.
//
// LogWriter encodes records into a block buffer and hands full blocks to a LogSink (a file
// segment, a ring in memory); LogReader reads them back from a file or a recording directory,
// checking every header and checksum, and is what a replay consumes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "reheap/actor_ref.h"
#include "reheap/message.h"
#include "reheap/reactor_io.h"

namespace reheap {

// Version 2 added the chunk record, version 3 the mark of a block whose last event goes on in the
// next one, version 4 the correlated message record (request/reply), version 5 the state_hash
// record's new digest (reheap::state_digest, independent of where the program is loaded); the
// reader reads versions 1 to 5 (a version 1 log simply has no chunk records, a log before version
// 3 cannot say whether its last event was cut, one before version 4 holds no request or reply, and
// one before version 5 holds used_pages_digest state hashes).
inline constexpr std::uint32_t kRecordingFormatVersion = 5;
// The first version whose state_hash records are reheap::state_digest.
inline constexpr std::uint32_t kPortableStateDigestVersion = 5;
inline constexpr std::uint32_t kOldestRecordingFormatVersion = 1;
// A block is flushed once its body reaches this size (or when asked, e.g. before a snapshot).
inline constexpr std::size_t kLogBlockBytes = std::size_t{64} << 10;

// The numbers are part of the format: never renumber. 1..9 are EventKind values.
enum class RecordKind : std::uint8_t {
  kStart = 1,
  kRestored = 2,
  kMessage = 3,
  kTimer = 4,
  kAccept = 5,
  kConnect = 6,
  kData = 7,
  kClosed = 8,
  kStop = 9,
  kEnd = 10,         // id = socket
  kDrained = 11,     // id = socket
  kAcceptError = 12, // id = the listener, error
  // On the wire only: a message of a request/reply exchange (reheap/request.h). The reader hands
  // it back as kMessage with result = the exchange (1 request, 2 reply) and id = the request's id;
  // the writer writes a kMessage record whose result is not 0 as this kind. Version 4 on.
  kCorrelatedMessage = 30,
  // ---- answers and outputs of the current event, in call order ----
  kSystemNow = 32,   // value[0]: ns since the Unix epoch
  kSteadyNow = 33,   // value[0]: ns of the steady clock
  kSeed = 34,        // value[0], value[1]
  kSend = 35,        // ref = to, type_id, encoding, length, digest/bytes, result (SendResult)
  kSpawn = 36,       // text = options name, ref = the child (null if it threw), detail = what()
  kStopCall = 37,    // Reactor::stop
  kRequestSnapshot = 38,  // id, ref = target, value[0] = SnapshotKind
  kTimerStart = 39,  // id, value[0] = delay ns, value[1] = period ns
  kTimerCancel = 40, // id
  kListen = 41,      // text = host, port, id = the socket (0 if it threw), detail = what()
  kConnectCall = 42, // text = host, port, id = the socket (0 if it threw), detail = what()
  kLocalPort = 43,   // id = socket, port
  kWrite = 44,       // id = socket, length, digest/bytes, result (encode_write_result)
  kClose = 45,       // id = socket
  kSetNoDelay = 46,  // id = socket, value[0] = on
  kWorker = 47,      // value[0] = the worker index (as a signed value)
  kSetReading = 48,  // id = socket, value[0] = on (resume_reading) or off (pause_reading)
  kSetWriteHighWater = 49,  // id = socket, value[0] = bytes
  // The reactor's heap took new zone chunks during the event (reheap/chunk_placement.h): result =
  // the half (ChunkHalf), id = the first chunk's zone index, value[0] = the chunks. Not a host call:
  // a replay takes the same chunks when its heap asks for chunks at the same point. Version 2 on.
  kChunk = 50,
  // Between this event and the next, the runtime wrote the reactor's live timers and sockets into
  // its heap for a snapshot, then cleared them: numbers = the timer count, then id, ns left and
  // period ns of each, then the socket count and the ids. A replay writes the same, so that its
  // heap's allocations follow the recorded ones. Version 3 on.
  kOutsideState = 51,
  kStateHash = 60,   // digest = hash of the heap's used pages after the event
  kEventFailed = 61, // text = hook, detail = what it threw
};

// A kWrite record's result byte: bit 0 written, bit 1 above the high-water mark. Logs written
// before the mark existed hold 0 or 1, which mean the same.
constexpr std::uint8_t encode_write_result(WriteResult r) noexcept {
  return static_cast<std::uint8_t>((r.written ? 1 : 0) | (r.above_high_water ? 2 : 0));
}
constexpr WriteResult decode_write_result(std::uint8_t byte) noexcept {
  return WriteResult{.written = (byte & 1) != 0, .above_high_water = (byte & 2) != 0};
}

// True for records that open an event (inputs), false for answers and outputs.
constexpr bool is_input(RecordKind kind) noexcept { return static_cast<std::uint8_t>(kind) < 32; }
const char* to_string(RecordKind kind) noexcept;

enum class ErrorCategory : std::uint8_t { kNone = 0, kGeneric = 1, kSystem = 2 };

// One decoded record. Which fields a kind uses is listed at RecordKind; the others stay zero.
struct LogRecord {
  RecordKind kind = RecordKind::kStart;
  ActorRef ref{};              // message sender, send target, spawn result, snapshot target
  std::uint64_t type_id = 0;   // message, send
  Encoding encoding = Encoding::kRaw;
  std::uint64_t id = 0;        // timer, socket (the listener for accept), snapshot request id,
                               // message: its request id (with result = its exchange)
  std::uint64_t connection = 0;  // accept
  std::uint64_t value[2] = {0, 0};
  std::uint16_t port = 0;
  ErrorCategory error_category = ErrorCategory::kNone;  // connect, closed
  int error_value = 0;
  std::uint8_t result = 0;     // send: SendResult; write: 1 if written; message: 0 plain,
                               // 1 request, 2 reply
  std::uint64_t length = 0;    // message, data, send, write: the payload's length
  bool has_digest = false;     // send, write
  std::uint64_t digest = 0;    // send, write (XXH3-64 of the payload), state hash
  bool has_bytes = false;      // message and data always; send and write with kPayloads
  std::string bytes;
  std::string text;            // spawn: options name; listen, connect: host; failed: hook
  std::string detail;          // spawn, listen, connect: what it threw; failed: what
  std::vector<std::int64_t> numbers;  // outside_state

  // Resets every field but keeps the strings' capacity (a writer reuses one record).
  void clear() noexcept;
};

enum class RecordingErrc : std::uint8_t {
  kCorrupt,         // a checksum or a structural check failed
  kTruncated,       // the log ends inside a block
  kVersion,         // a format version this reader does not know
  kNotARecording,   // no recording header
  kMismatch,        // files of different recordings or reactors, or a gap between them
  kIo,              // reading or writing failed (the message says why)
  kChunkInUse,      // a replay must take the recorded chunks, and a live heap of this process holds one
  kIncomplete,      // a crash bundle whose log does not reach the failing event its manifest names,
                    // or does not mark that event failed: its failure cannot be replayed
};

class RecordingError : public std::runtime_error {
 public:
  RecordingError(RecordingErrc code, std::filesystem::path file, std::uint64_t event,
                 const std::string& what);
  RecordingErrc code() const noexcept { return code_; }
  const std::filesystem::path& file() const noexcept { return file_; }
  std::uint64_t event() const noexcept { return event_; }  // the event where it happened, or 0

 private:
  RecordingErrc code_;
  std::filesystem::path file_;
  std::uint64_t event_;
};

struct LogHeader {
  // The file's format version: a writer writes kRecordingFormatVersion whatever this says but for
  // tests of older logs; a reader sets what it read (every segment of a log has the same).
  std::uint32_t version = kRecordingFormatVersion;
  std::uint64_t recording_id = 0;
  ActorRef actor{};
  std::string build_id;            // lowercase hex of the recording program's GNU build-id
  std::uint64_t events_before = 0; // the reactor's event count before the file's first record
  std::uint64_t created_unix_ns = 0;
};

// The encoded file header (RECORDING_FORMAT.md, "File header").
std::vector<unsigned char> encode_log_header(const LogHeader& header);
// The build-id of this process's main executable (lowercase hex, "" if it has none).
const std::string& program_build_id();

// Where finished blocks go. `events_before`: the events before the block's first record.
class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void write_block(std::uint64_t events_before, std::span<const unsigned char> block) = 0;
};

// LogWriter: records into blocks, blocks to a sink. An input record opens an event and
// close_event() closes it; a block handed over while an event is open (a long event's full block)
// is marked as continuing, so that a log cut after it never passes for one whose last event is
// whole. The records of the events closed so far in the block being built (committed()) are what
// a fatal signal's handler on another thread may write out (runtime/src/recording/fatal_flush.h):
// they are never moved while the writer keeps room() for what it appends, which its owner checks
// (encoded_bound) before each append and grows (reserve_room) under the handler's exclusion.
class LogWriter {
 public:
  // `events_before`: the events before the first record to come (the anchor's event count).
  LogWriter(LogSink& sink, std::uint64_t events_before) noexcept
      : sink_(sink), events_(events_before), block_events_before_(events_before), committed_event_(events_before) {}
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Encodes `record` into the current block (an input record opens an event).
  void append(const LogRecord& record);
  // Hands the current block, if it holds anything, to the sink. The sink's exceptions pass;
  // the block is dropped then.
  void flush();
  // The event's records are all appended: they become part of committed().
  void close_event() noexcept {
    open_event_ = false;
    committed_event_.store(events_, std::memory_order_relaxed);
    committed_.store(pack_committed(body_.size(), records_), std::memory_order_release);
  }
  // At an event's end: closes it, and flushes if the block is full.
  void end_event() {
    close_event();
    if (body_.size() >= kLogBlockBytes) flush();
  }
  // Forgets the current block and starts over after `events_before` events (a new anchor).
  void restart(std::uint64_t events_before) noexcept;

  std::uint64_t events() const noexcept { return events_; }  // inputs written so far, in total
  std::size_t pending_bytes() const noexcept { return body_.size(); }
  bool in_event() const noexcept { return open_event_; }

  // The two commonest records, encoded straight into the block with no LogRecord in between and
  // no allocation: an input message (the receiver's record of every message) and a send whose
  // payload is recorded as a digest or not at all (the sender's). The bytes are append()'s for
  // the same record. False, with nothing written, when the block's buffer lacks the room
  // (fast_bound): the caller then grows it (reserve_room, under the fatal signal's exclusion) and
  // appends the LogRecord.
  bool append_message(ActorRef sender, std::uint64_t type_id, Encoding encoding, std::uint8_t exchange,
                      std::uint64_t correlation, const void* payload, std::size_t size) noexcept;
  bool append_send(ActorRef to, std::uint64_t type_id, Encoding encoding, std::size_t length, bool has_digest,
                   std::uint64_t digest, std::uint8_t result) noexcept;
  // At most the bytes append_message or append_send adds, besides the payload.
  static constexpr std::size_t kFastRecordBound = 96;

  // At most the bytes append(record) adds to the block.
  static std::size_t encoded_bound(const LogRecord& record) noexcept {
    return kFastRecordBound + record.bytes.size() + record.text.size() + record.detail.size() +
           10 * record.numbers.size();
  }
  // Bytes the block can grow by before its buffer moves.
  std::size_t room() const noexcept { return body_.capacity() - body_.size(); }
  // Makes room() at least `bytes` (the buffer may move: see above).
  void reserve_room(std::size_t bytes);

  // The closed events of the block held now: their records, for a fatal signal's handler, which
  // writes them as a block of their own (no allocation). `records` is 0 when there are none.
  struct Committed {
    std::uint64_t events_before = 0;  // the block's
    std::uint64_t last_event = 0;     // the index of the last closed event (in any block)
    std::uint32_t records = 0;
    std::span<const unsigned char> body;
  };
  Committed committed() const noexcept;

  // For a fatal signal's handler, which may not allocate (runtime/src/recording/fatal_signal.h):
  // the block held now, closed with one more record, `last` (see encode_event_failed), whose
  // bytes follow `*body` in the block. Writes the block's 28-byte header into `header`. False
  // while an append is under way, when the block may be half-written.
  bool seal_with(std::span<const unsigned char> last, std::span<unsigned char, 28> header,
                 std::span<const unsigned char>* body) const noexcept;
  // Encodes the kEventFailed record append() would write for `hook` and `what` into `out`
  // (`what` cut to fit), allocating nothing; returns the bytes used. `out` holds at least 64.
  static std::size_t encode_event_failed(std::span<unsigned char> out, std::string_view hook,
                                         std::string_view what) noexcept;

 private:
  std::uint64_t ref_index(ActorRef ref);
  std::uint64_t type_index(std::uint64_t type_id, Encoding encoding);
  // The index of `ref` (`type_id`, `encoding`) in this block's dictionary, or its size if absent.
  std::size_t find_ref(ActorRef ref) noexcept;
  std::size_t find_type(std::uint64_t type_id, Encoding encoding) noexcept;

  // The block's body. Unlike a vector's, its spare capacity may be written before it is counted:
  // the fast appends encode a record there and count it once whole, so a fatal signal's handler
  // (seal_with) never sees half a record in size().
  class Body {
   public:
    const unsigned char* data() const noexcept { return bytes_.get(); }
    std::size_t size() const noexcept { return size_; }
    std::size_t capacity() const noexcept { return capacity_; }
    unsigned char* end() noexcept { return bytes_.get() + size_; }
    void count(std::size_t bytes) noexcept { size_ += bytes; }
    void clear() noexcept { size_ = 0; }
    // Makes the capacity at least `bytes`, moving the contents.
    void reserve(std::size_t bytes);
    // Appends `n` bytes, growing (at least doubling) when they do not fit.
    void append(const unsigned char* data, std::size_t n);

   private:
    std::unique_ptr<unsigned char[]> bytes_;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
  };

  static constexpr std::uint64_t pack_committed(std::size_t bytes, std::uint32_t records) noexcept {
    return (static_cast<std::uint64_t>(bytes) << 32) | records;
  }

  LogSink& sink_;
  std::uint64_t events_;
  std::uint64_t block_events_before_;
  std::uint32_t records_ = 0;
  bool open_event_ = false;  // an input record was appended and close_event() not called since
  Body body_;
  std::vector<unsigned char> encoding_;  // append()'s record, encoded here, then appended to body_
  // The closed events' part of body_: bytes << 32 | records (one store publishes both), and the
  // last closed event's index. Written by the owner, read by a fatal signal's handler.
  std::atomic<std::uint64_t> committed_{0};
  std::atomic<std::uint64_t> committed_event_{0};
  std::vector<std::uint64_t> refs_;  // this block's dictionaries (searched linearly: they are short)
  std::vector<std::pair<std::uint64_t, Encoding>> types_;
  // The dictionaries' last hits: a run of records mostly names the same sender and type.
  std::size_t last_ref_ = 0;
  std::size_t last_type_ = 0;
  std::vector<unsigned char> block_;  // header + body, reused
  bool appending_ = false;  // an append is under way: the body may be half-written (seal_with)
};

class LogReader {
 public:
  // A log file, or a recording directory (its log-*.rlog segments, in order, which must be of
  // one recording and follow each other without a gap). Throws RecordingError.
  explicit LogReader(const std::filesystem::path& file_or_directory);
  // A log held in memory (a ring recording's), read as one file named `name` in errors.
  LogReader(std::vector<unsigned char> bytes, std::filesystem::path name);
  ~LogReader();
  LogReader(const LogReader&) = delete;
  LogReader& operator=(const LogReader&) = delete;

  const LogHeader& header() const noexcept;  // of the first file
  // The next record, false at the end of the log. Throws RecordingError on a damaged log.
  bool next(LogRecord& record);
  // The index of the event the last record read belongs to (the header's events_before before
  // any).
  std::uint64_t position() const noexcept;

  // How the log ends, once next() has returned false. A recording process killed while it wrote
  // leaves a log whose last block is cut short (dropped: `torn`), or whose last event has not all
  // its records (`event_cut`: the last block is a long event's, marked as going on in a block that
  // was never written); a reader must not take that event for a whole one. Both only at the end
  // of the last segment: anywhere else a cut is damage (kTruncated). Logs before format version 3
  // cannot tell a cut event.
  struct End {
    std::uint64_t last_whole_event = 0;  // the last event whose records are all in the log
    bool torn = false;
    bool event_cut = false;
    std::string note;  // "" for a clean end; else what was left out, naming the file
  };
  const End& end() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace reheap
