// The recording log's format (RECORDING_FORMAT.md): every record kind survives a round trip,
// a message costs at most its payload plus 16 bytes, and a damaged log is refused with an error
// that names the file, the block and the event.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "reheap/recording_log.h"
#include "runtime_support.h"

namespace reheap::recording_log_test {
namespace {

using rttest::TempDir;

// A log file: the header, then the blocks the writer hands over.
class FileOfBlocks final : public LogSink {
 public:
  FileOfBlocks(const std::filesystem::path& file, const LogHeader& header) : out_(file, std::ios::binary) {
    const std::vector<unsigned char> bytes = encode_log_header(header);
    out_.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  void write_block(std::uint64_t, std::span<const unsigned char> block) override {
    block_offsets.push_back(static_cast<std::size_t>(out_.tellp()));
    out_.write(reinterpret_cast<const char*>(block.data()), static_cast<std::streamsize>(block.size()));
    out_.flush();
  }
  std::vector<std::size_t> block_offsets;

 private:
  std::ofstream out_;
};

LogHeader header(std::uint64_t recording_id, std::uint64_t events_before = 0) {
  LogHeader h;
  h.recording_id = recording_id;
  h.actor = ActorRef(0x1234'5678'9abcull);
  h.build_id = program_build_id();
  h.events_before = events_before;
  h.created_unix_ns = 1'700'000'000'000'000'000ull;
  return h;
}

LogRecord make(RecordKind kind) {
  LogRecord r;
  r.kind = kind;
  return r;
}

// One record of every kind, with every field its kind uses set to something distinctive.
std::vector<LogRecord> every_kind() {
  std::vector<LogRecord> v;
  v.push_back(make(RecordKind::kStart));
  LogRecord m = make(RecordKind::kMessage);
  m.ref = ActorRef(77);
  m.type_id = 0xfeedbeefcafeull;
  m.encoding = Encoding::kMsgpack;
  m.bytes = std::string("hello\0world", 11);
  m.length = 11;
  m.has_bytes = true;
  v.push_back(m);
  LogRecord now = make(RecordKind::kSystemNow);
  now.value[0] = 1'700'000'000'123'456'789ull;
  v.push_back(now);
  LogRecord steady = make(RecordKind::kSteadyNow);
  steady.value[0] = 42'000;
  v.push_back(steady);
  LogRecord seed = make(RecordKind::kSeed);
  seed.value[0] = ~0ull;
  seed.value[1] = 0x0123456789abcdefull;
  v.push_back(seed);
  LogRecord send = make(RecordKind::kSend);
  send.ref = ActorRef(77);
  send.type_id = 5;
  send.encoding = Encoding::kRaw;
  send.length = 4;
  send.has_digest = true;
  send.digest = 0xdeadbeefull;
  send.has_bytes = true;
  send.bytes = "abcd";
  send.result = static_cast<std::uint8_t>(SendResult::kNoSuchReactor);
  v.push_back(send);
  LogRecord spawn = make(RecordKind::kSpawn);
  spawn.text = "child";
  spawn.ref = ActorRef(99);
  v.push_back(spawn);
  LogRecord spawn_failed = make(RecordKind::kSpawn);
  spawn_failed.text = "bad";
  spawn_failed.detail = "constructor threw";
  v.push_back(spawn_failed);
  v.push_back(make(RecordKind::kStopCall));
  LogRecord snap = make(RecordKind::kRequestSnapshot);
  snap.id = 3;
  snap.ref = ActorRef(1000);
  snap.value[0] = 1;
  v.push_back(snap);
  LogRecord timer_start = make(RecordKind::kTimerStart);
  timer_start.id = 8;
  timer_start.value[0] = 5'000'000;
  timer_start.value[1] = 1'000;
  v.push_back(timer_start);
  LogRecord cancel = make(RecordKind::kTimerCancel);
  cancel.id = 8;
  v.push_back(cancel);
  LogRecord listen = make(RecordKind::kListen);
  listen.text = "127.0.0.1";
  listen.port = 8080;
  listen.id = 11;
  v.push_back(listen);
  LogRecord connect = make(RecordKind::kConnectCall);
  connect.text = "nowhere";
  connect.port = 1;
  connect.detail = "no such host";
  v.push_back(connect);
  LogRecord port = make(RecordKind::kLocalPort);
  port.id = 11;
  port.port = 65535;
  v.push_back(port);
  LogRecord write = make(RecordKind::kWrite);
  write.id = 12;
  write.length = 1000;
  write.has_digest = true;
  write.digest = 17;
  write.result = 1;
  v.push_back(write);
  LogRecord close = make(RecordKind::kClose);
  close.id = 12;
  v.push_back(close);
  LogRecord no_delay = make(RecordKind::kSetNoDelay);
  no_delay.id = 12;
  no_delay.value[0] = 1;
  v.push_back(no_delay);
  LogRecord reading = make(RecordKind::kSetReading);
  reading.id = 12;
  v.push_back(reading);  // pause_reading: value 0
  LogRecord high_water = make(RecordKind::kSetWriteHighWater);
  high_water.id = 12;
  high_water.value[0] = 1ull << 33;
  v.push_back(high_water);
  LogRecord above = write;
  above.result = encode_write_result({.written = true, .above_high_water = true});
  v.push_back(above);
  LogRecord worker = make(RecordKind::kWorker);
  worker.value[0] = static_cast<std::uint64_t>(-1ll);
  v.push_back(worker);
  LogRecord chunk = make(RecordKind::kChunk);
  chunk.result = 1;  // the large half
  chunk.id = 0x7'ffffull;
  chunk.value[0] = 3;
  v.push_back(chunk);
  LogRecord hash = make(RecordKind::kStateHash);
  hash.digest = 0xabcdef0123456789ull;
  v.push_back(hash);
  LogRecord outside = make(RecordKind::kOutsideState);
  outside.numbers = {1, 4, -5, 2'000'000, 2, 7, 9};  // one timer (id 4), two sockets
  v.push_back(outside);
  LogRecord timer = make(RecordKind::kTimer);
  timer.id = 8;
  v.push_back(timer);
  LogRecord accept = make(RecordKind::kAccept);
  accept.id = 11;
  accept.connection = 13;
  v.push_back(accept);
  LogRecord connected = make(RecordKind::kConnect);
  connected.id = 14;
  connected.error_category = ErrorCategory::kSystem;
  connected.error_value = 111;
  v.push_back(connected);
  LogRecord data = make(RecordKind::kData);
  data.id = 13;
  data.bytes = "GET / HTTP/1.1\r\n";
  data.length = data.bytes.size();
  data.has_bytes = true;
  v.push_back(data);
  LogRecord closed = make(RecordKind::kClosed);
  closed.id = 13;
  closed.error_category = ErrorCategory::kGeneric;
  closed.error_value = 103;
  v.push_back(closed);
  LogRecord end = make(RecordKind::kEnd);
  end.id = 15;
  v.push_back(end);
  LogRecord drained = make(RecordKind::kDrained);
  drained.id = 15;
  v.push_back(drained);
  LogRecord accept_error = make(RecordKind::kAcceptError);
  accept_error.id = 11;
  accept_error.error_category = ErrorCategory::kSystem;
  accept_error.error_value = 24;
  v.push_back(accept_error);
  v.push_back(make(RecordKind::kRestored));
  LogRecord failed = make(RecordKind::kEventFailed);
  failed.text = "on_restored";
  failed.detail = "\"quoted\"";
  v.push_back(failed);
  v.push_back(make(RecordKind::kStop));
  return v;
}

void expect_same(const LogRecord& a, const LogRecord& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.ref, b.ref) << to_string(a.kind);
  EXPECT_EQ(a.type_id, b.type_id) << to_string(a.kind);
  EXPECT_EQ(a.encoding, b.encoding) << to_string(a.kind);
  EXPECT_EQ(a.id, b.id) << to_string(a.kind);
  EXPECT_EQ(a.connection, b.connection) << to_string(a.kind);
  EXPECT_EQ(a.value[0], b.value[0]) << to_string(a.kind);
  EXPECT_EQ(a.value[1], b.value[1]) << to_string(a.kind);
  EXPECT_EQ(a.port, b.port) << to_string(a.kind);
  EXPECT_EQ(a.error_category, b.error_category) << to_string(a.kind);
  EXPECT_EQ(a.error_value, b.error_value) << to_string(a.kind);
  EXPECT_EQ(a.result, b.result) << to_string(a.kind);
  EXPECT_EQ(a.length, b.length) << to_string(a.kind);
  EXPECT_EQ(a.has_digest, b.has_digest) << to_string(a.kind);
  EXPECT_EQ(a.digest, b.digest) << to_string(a.kind);
  EXPECT_EQ(a.has_bytes, b.has_bytes) << to_string(a.kind);
  EXPECT_EQ(a.bytes, b.bytes) << to_string(a.kind);
  EXPECT_EQ(a.text, b.text) << to_string(a.kind);
  EXPECT_EQ(a.detail, b.detail) << to_string(a.kind);
  EXPECT_EQ(a.numbers, b.numbers) << to_string(a.kind);
}

TEST(RecordingLog, EveryRecordKindSurvivesARoundTrip) {
  TempDir dir;
  const std::filesystem::path file = dir.path() / "log-11.rlog";
  const std::vector<LogRecord> records = every_kind();
  {
    FileOfBlocks sink(file, header(42, 10));
    LogWriter writer(sink, 10);
    // Half in one block, half in the next: the dictionaries start over in each.
    for (std::size_t i = 0; i < records.size(); ++i) {
      writer.append(records[i]);
      if (i == records.size() / 2) writer.flush();
    }
    writer.flush();
    EXPECT_EQ(sink.block_offsets.size(), 2u);
  }
  LogReader reader(file);
  EXPECT_EQ(reader.header().recording_id, 42u);
  EXPECT_EQ(reader.header().actor, ActorRef(0x1234'5678'9abcull));
  EXPECT_EQ(reader.header().build_id, program_build_id());
  EXPECT_FALSE(program_build_id().empty());
  EXPECT_EQ(reader.header().events_before, 10u);
  EXPECT_EQ(reader.position(), 10u);
  LogRecord r;
  std::uint64_t inputs = 0;
  for (const LogRecord& expected : records) {
    ASSERT_TRUE(reader.next(r));
    expect_same(r, expected);
    if (is_input(expected.kind)) ++inputs;
    EXPECT_EQ(reader.position(), 10 + inputs);
  }
  EXPECT_FALSE(reader.next(r));
}

struct Tick {
  std::uint64_t n;
  std::uint64_t pad[3];
};

// Writes `count` 32-byte messages from three senders, two types, as a recorder would (one block
// flushed whenever it is full). Returns the file.
std::filesystem::path write_messages(const TempDir& dir, std::uint64_t recording_id, std::uint64_t count,
                                     std::vector<std::size_t>* block_offsets = nullptr) {
  const std::filesystem::path file = dir.path() / ("log-" + std::to_string(recording_id) + ".rlog");
  FileOfBlocks sink(file, header(recording_id));
  LogWriter writer(sink, 0);
  LogRecord m;
  m.kind = RecordKind::kMessage;
  m.has_bytes = true;
  for (std::uint64_t i = 0; i < count; ++i) {
    m.ref = ActorRef(1000 + i % 3);
    m.type_id = i % 2 == 0 ? 0x1111'2222'3333ull : 0x4444'5555'6666ull;
    Tick t{i, {i, i, i}};
    m.bytes.assign(reinterpret_cast<const char*>(&t), sizeof t);
    m.length = sizeof t;
    writer.append(m);
    writer.end_event();
  }
  writer.flush();
  if (block_offsets != nullptr) *block_offsets = sink.block_offsets;
  return file;
}

TEST(RecordingLog, AMessageCostsAtMostItsPayloadPlus16Bytes) {
  TempDir dir;
  constexpr std::uint64_t kCount = 20'000;
  const std::filesystem::path file = write_messages(dir, 1, kCount);
  const auto total = static_cast<double>(std::filesystem::file_size(file));
  const double per_message = total / kCount;
  const double framing = per_message - static_cast<double>(sizeof(Tick));
  std::printf("recording: %.2f bytes per %zu-byte message (%.2f bytes of framing, file header included)\n",
              per_message, sizeof(Tick), framing);
  EXPECT_LE(framing, 16.0);
  LogReader reader(file);
  LogRecord r;
  std::uint64_t n = 0;
  while (reader.next(r)) {
    ASSERT_EQ(r.ref, ActorRef(1000 + n % 3));
    Tick t{};
    std::memcpy(&t, r.bytes.data(), sizeof t);
    ASSERT_EQ(t.n, n);
    ++n;
  }
  EXPECT_EQ(n, kCount);
  EXPECT_EQ(reader.position(), kCount);
}

std::vector<unsigned char> read_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::filesystem::path& file, const std::vector<unsigned char>& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// A recording directory of two segments, a start in the first and a stop in the second.
void write_two_segments(const std::filesystem::path& dir, const LogHeader& first_header,
                        const LogHeader& second_header) {
  FileOfBlocks first(dir / "log-1.rlog", first_header);
  LogWriter writer(first, 0);
  writer.append(make(RecordKind::kStart));
  writer.close_event();
  writer.flush();
  FileOfBlocks second(dir / "log-2.rlog", second_header);
  LogWriter other(second, 1);
  other.append(make(RecordKind::kStop));
  other.close_event();
  other.flush();
}

// Reads the whole log; returns the error it ends with.
RecordingError read_until_error(const std::filesystem::path& file) {
  try {
    LogReader reader(file);
    LogRecord r;
    while (reader.next(r)) {
    }
  } catch (const RecordingError& e) {
    return e;
  }
  ADD_FAILURE() << file << " read without error";
  return RecordingError(RecordingErrc::kIo, file, 0, "no error");
}

// The blocks a writer hands over, kept in memory.
class BlocksInMemory final : public LogSink {
 public:
  void write_block(std::uint64_t, std::span<const unsigned char> block) override {
    blocks.emplace_back(block.begin(), block.end());
  }
  std::vector<std::vector<unsigned char>> blocks;
};

// The messages and sends of a recorded exchange: senders and types new, repeated and
// alternating (the dictionaries' first entries, their last hit, an older entry), requests and
// replies (correlated), empty payloads, sends with and without a digest.
struct FastCase {
  bool send;
  std::uint64_t ref;
  std::uint64_t type_id;
  Encoding encoding;
  std::uint8_t exchange;
  std::uint64_t correlation;
  std::string payload;
  bool digest;
  std::uint8_t result;
};

std::vector<FastCase> fast_cases() {
  std::vector<FastCase> v;
  for (std::uint64_t i = 0; i < 3000; ++i) {
    FastCase c{};
    c.send = i % 3 == 2;
    c.ref = i % 7 == 0 ? 1000 + i : 10 + i % 5;  // some new, most known
    c.type_id = i % 11 == 0 ? 0xabcdef00ull + i % 4 : 42;
    c.encoding = i % 13 == 0 ? Encoding::kMsgpack : Encoding::kRaw;
    c.exchange = static_cast<std::uint8_t>(i % 17 == 0 ? 1 : i % 19 == 0 ? 2 : 0);
    c.correlation = c.exchange != 0 ? (std::uint64_t{1} << (i % 60)) + i : 0;
    c.payload = std::string(i % 23, static_cast<char>('a' + i % 26));
    c.digest = i % 4 != 0;
    c.result = static_cast<std::uint8_t>(i % 3);
    v.push_back(std::move(c));
  }
  return v;
}

TEST(RecordingLog, TheFastAppendsWriteTheBytesOfTheirRecords) {
  BlocksInMemory fast_sink;
  BlocksInMemory slow_sink;
  LogWriter fast(fast_sink, 5);
  LogWriter slow(slow_sink, 5);
  std::uint64_t fast_records = 0;
  for (const FastCase& c : fast_cases()) {
    LogRecord r;
    r.ref = ActorRef(c.ref);
    r.type_id = c.type_id;
    r.encoding = c.encoding;
    if (c.send) {
      r.kind = RecordKind::kSend;
      r.length = c.payload.size();
      r.has_digest = c.digest;
      r.digest = c.digest ? 0x0123'4567'89ab'cdefull ^ c.ref : 0;
      r.result = c.result;
    } else {
      if (fast.in_event()) fast.close_event();
      if (slow.in_event()) slow.close_event();
      r.kind = RecordKind::kMessage;
      r.result = c.exchange;
      r.id = c.correlation;
      r.bytes = c.payload;
    }
    slow.reserve_room(LogWriter::encoded_bound(r));
    slow.append(r);
    // The fast append refuses when its buffer or a dictionary lacks the room; the LogRecord then
    // goes through append(), as the recorder does it, and the bytes must still be the same.
    const bool done = c.send ? fast.append_send(r.ref, r.type_id, r.encoding, r.length, r.has_digest, r.digest, r.result)
                             : fast.append_message(r.ref, r.type_id, r.encoding, c.exchange, c.correlation,
                                                   c.payload.data(), c.payload.size());
    if (done) {
      ++fast_records;
    } else {
      fast.reserve_room(LogWriter::encoded_bound(r));
      fast.append(r);
    }
    ASSERT_EQ(fast.pending_bytes(), slow.pending_bytes());
    ASSERT_EQ(fast.events(), slow.events());
    if (slow.pending_bytes() > 4096) {
      fast.close_event();
      slow.close_event();
      fast.flush();
      slow.flush();
    }
  }
  fast.close_event();
  slow.close_event();
  fast.flush();
  slow.flush();
  EXPECT_GT(fast_records, 2500u);  // most records took the fast path
  ASSERT_EQ(fast_sink.blocks.size(), slow_sink.blocks.size());
  for (std::size_t i = 0; i < slow_sink.blocks.size(); ++i) EXPECT_EQ(fast_sink.blocks[i], slow_sink.blocks[i]) << "block " << i;
}

TEST(RecordingLog, AFastAppendWithoutRoomWritesNothing) {
  BlocksInMemory sink;
  LogWriter writer(sink, 0);
  const char payload[4] = {1, 2, 3, 4};
  // A new writer has no buffer and empty dictionaries: the fast append refuses.
  EXPECT_FALSE(writer.append_message(ActorRef(9), 7, Encoding::kRaw, 0, 0, payload, sizeof payload));
  EXPECT_FALSE(writer.append_send(ActorRef(9), 7, Encoding::kRaw, 4, true, 1, 0));
  EXPECT_EQ(writer.pending_bytes(), 0u);
  EXPECT_EQ(writer.events(), 0u);
  EXPECT_FALSE(writer.in_event());
  writer.flush();
  EXPECT_TRUE(sink.blocks.empty());
}

TEST(RecordingLog, AFlippedBitIsCorruptionNamingTheBlock) {
  TempDir dir;
  std::vector<std::size_t> blocks;
  const std::filesystem::path file = write_messages(dir, 2, 6'000, &blocks);
  ASSERT_GE(blocks.size(), 3u);
  std::vector<unsigned char> bytes = read_bytes(file);
  bytes[blocks[1] + 28 + 100] ^= 0x10;  // inside the second block's body
  write_bytes(file, bytes);
  const RecordingError e = read_until_error(file);
  EXPECT_EQ(e.code(), RecordingErrc::kCorrupt);
  EXPECT_EQ(e.file(), file);
  const std::string what = e.what();
  EXPECT_NE(what.find("block at offset " + std::to_string(blocks[1])), std::string::npos) << what;
  EXPECT_NE(what.find("checksum"), std::string::npos) << what;
  EXPECT_GT(e.event(), 0u);  // the event the first block ended at
  EXPECT_NE(what.find("event " + std::to_string(e.event())), std::string::npos) << what;
}

// A last block cut short (a process killed while it wrote it) ends the log at the block before, and
// the reader says so; the same cut in a segment that is not the last is damage.
TEST(RecordingLog, ATornLastBlockEndsTheLogAtTheBlockBeforeAndSaysSo) {
  TempDir dir;
  std::vector<std::size_t> blocks;
  const std::filesystem::path file = write_messages(dir, 3, 6'000, &blocks);
  ASSERT_GE(blocks.size(), 3u);
  std::vector<unsigned char> bytes = read_bytes(file);
  bytes.resize(blocks.back() + 500);  // the last block is cut short
  write_bytes(file, bytes);
  LogReader reader(file);
  LogRecord r;
  std::uint64_t last = 0;
  while (reader.next(r)) last = reader.position();
  EXPECT_LT(last, 6'000u);
  EXPECT_GT(last, 0u);
  EXPECT_TRUE(reader.end().torn);
  EXPECT_FALSE(reader.end().event_cut);  // the blocks before ended at events' ends
  EXPECT_EQ(reader.end().last_whole_event, last);
  EXPECT_NE(reader.end().note.find("ends after event " + std::to_string(last)), std::string::npos) << reader.end().note;
  EXPECT_NE(reader.end().note.find(file.string()), std::string::npos) << reader.end().note;
}

TEST(RecordingLog, ATornBlockBeforeTheLastSegmentIsDamage) {
  TempDir dir;
  const std::filesystem::path recording = dir.path() / "recording";
  std::filesystem::create_directories(recording);
  write_two_segments(recording, header(9), [] {
    LogHeader h = header(9);
    h.events_before = 1;
    return h;
  }());
  std::vector<unsigned char> bytes = read_bytes(recording / "log-1.rlog");
  bytes.resize(bytes.size() - 3);
  write_bytes(recording / "log-1.rlog", bytes);
  const RecordingError e = read_until_error(recording);
  EXPECT_EQ(e.code(), RecordingErrc::kTruncated);
  EXPECT_NE(std::string(e.what()).find("log-1.rlog"), std::string::npos) << e.what();
}

// A long event's blocks say that the event goes on; a log that ends after one (the next block
// never written) ends before that event.
TEST(RecordingLog, ALogEndingInsideALongEventEndsAtTheEventBefore) {
  TempDir dir;
  const std::filesystem::path file = dir.path() / "log-1.rlog";
  {
    FileOfBlocks sink(file, header(5));
    LogWriter writer(sink, 0);
    writer.append(make(RecordKind::kStart));
    writer.end_event();
    writer.append(make(RecordKind::kStop));  // event 2, cut: its block is handed over mid-event
    LogRecord now = make(RecordKind::kSystemNow);
    writer.append(now);
    writer.flush();
  }
  LogReader reader(file);
  LogRecord r;
  while (reader.next(r)) {
  }
  EXPECT_EQ(reader.position(), 2u);
  EXPECT_TRUE(reader.end().event_cut);
  EXPECT_FALSE(reader.end().torn);
  EXPECT_EQ(reader.end().last_whole_event, 1u);
  EXPECT_NE(reader.end().note.find("event 2 is cut"), std::string::npos) << reader.end().note;
}

TEST(RecordingLog, OtherFilesAndOtherRecordingsAreRefused) {
  TempDir dir;
  const std::filesystem::path junk = dir.path() / "junk.rlog";
  write_bytes(junk, std::vector<unsigned char>(200, 'x'));
  const RecordingError not_one = read_until_error(junk);
  EXPECT_EQ(not_one.code(), RecordingErrc::kNotARecording);
  EXPECT_NE(std::string(not_one.what()).find("junk.rlog"), std::string::npos);

  // A later format version.
  const std::filesystem::path file = write_messages(dir, 4, 10);
  std::vector<unsigned char> bytes = read_bytes(file);
  bytes[8] = 9;
  const std::filesystem::path future = dir.path() / "future.rlog";
  write_bytes(future, bytes);
  const RecordingError version = read_until_error(future);
  EXPECT_EQ(version.code(), RecordingErrc::kVersion);
  EXPECT_NE(std::string(version.what()).find("version 9"), std::string::npos) << version.what();

  // A version this reader does not know yet... and none before the first.
  bytes[8] = 0;
  write_bytes(future, bytes);
  EXPECT_EQ(read_until_error(future).code(), RecordingErrc::kVersion);

  // A directory whose second segment belongs to another recording.
  TempDir recording;
  write_two_segments(recording.path(), header(5, 0), header(6, 1));
  const RecordingError mismatch = read_until_error(recording.path());
  EXPECT_EQ(mismatch.code(), RecordingErrc::kMismatch);
  EXPECT_EQ(mismatch.file(), recording.path() / "log-2.rlog");
  EXPECT_NE(std::string(mismatch.what()).find("another recording"), std::string::npos) << mismatch.what();
}

LogRecord chunk_record(std::uint8_t half, std::uint64_t first, std::uint64_t count) {
  LogRecord r = make(RecordKind::kChunk);
  r.result = half;
  r.id = first;
  r.value[0] = count;
  return r;
}

// Writes one event (on_start) with `extra` after its input, in a log of format `version`.
std::filesystem::path write_event(const TempDir& dir, const std::string& name, std::uint32_t version,
                                  const LogRecord& extra) {
  const std::filesystem::path file = dir.path() / name;
  LogHeader h = header(7);
  h.version = version;
  FileOfBlocks sink(file, h);
  LogWriter writer(sink, 0);
  writer.append(make(RecordKind::kStart));
  writer.append(extra);
  writer.close_event();
  writer.flush();
  return file;
}

TEST(RecordingLog, AVersion1LogIsReadAndHasNoChunkRecords) {
  TempDir dir;
  LogRecord now = make(RecordKind::kSystemNow);
  now.value[0] = 5;
  const std::filesystem::path old = write_event(dir, "old.rlog", 1, now);
  LogReader reader(old);
  EXPECT_EQ(reader.header().version, 1u);
  LogRecord r;
  ASSERT_TRUE(reader.next(r));
  ASSERT_TRUE(reader.next(r));
  EXPECT_EQ(r.kind, RecordKind::kSystemNow);
  EXPECT_FALSE(reader.next(r));
  EXPECT_EQ(LogReader(write_event(dir, "new.rlog", kRecordingFormatVersion, now)).header().version,
            kRecordingFormatVersion);

  // Version 1 had no kind 50: a chunk record in such a file is not one.
  const RecordingError e = read_until_error(write_event(dir, "old-chunk.rlog", 1, chunk_record(0, 5, 1)));
  EXPECT_EQ(e.code(), RecordingErrc::kCorrupt);
  EXPECT_NE(std::string(e.what()).find("unknown record kind 50"), std::string::npos) << e.what();
}

// A message of a request/reply exchange keeps its exchange and request id (kind 30, version 4);
// a log of version 3 has no such kind.
TEST(RecordingLog, ACorrelatedMessageKeepsItsExchangeAndRequestIdFromVersion4On) {
  TempDir dir;
  for (const std::uint8_t exchange : {1, 2}) {
    LogRecord m = make(RecordKind::kMessage);
    m.ref = ActorRef(0x55);
    m.type_id = 0x77;
    m.bytes = "abc";
    m.length = 3;
    m.has_bytes = true;
    m.result = exchange;
    m.id = 0x1234'5678'0000'0009ull;
    LogReader reader(write_event(dir, "v4-" + std::to_string(exchange) + ".rlog", 4, m));
    LogRecord r;
    ASSERT_TRUE(reader.next(r));
    ASSERT_TRUE(reader.next(r));
    expect_same(r, m);
    EXPECT_FALSE(reader.next(r));
    const RecordingError e = read_until_error(write_event(dir, "v3-" + std::to_string(exchange) + ".rlog", 3, m));
    EXPECT_EQ(e.code(), RecordingErrc::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("unknown record kind 30"), std::string::npos) << e.what();
  }
}

TEST(RecordingLog, AChunkRecordOfNoHalfOrNoChunksIsCorrupt) {
  TempDir dir;
  const RecordingError half = read_until_error(write_event(dir, "half.rlog", 2, chunk_record(2, 5, 1)));
  EXPECT_EQ(half.code(), RecordingErrc::kCorrupt);
  EXPECT_NE(std::string(half.what()).find("no zone half"), std::string::npos) << half.what();
  const RecordingError none = read_until_error(write_event(dir, "none.rlog", 2, chunk_record(1, 5, 0)));
  EXPECT_EQ(none.code(), RecordingErrc::kCorrupt);
  EXPECT_NE(std::string(none.what()).find("no chunks"), std::string::npos) << none.what();
}

TEST(RecordingLog, TheSegmentsOfALogShareOneFormatVersion) {
  TempDir recording;
  LogHeader first_header = header(8, 0);
  first_header.version = 1;
  write_two_segments(recording.path(), first_header, header(8, 1));
  const RecordingError e = read_until_error(recording.path());
  EXPECT_EQ(e.code(), RecordingErrc::kMismatch);
  EXPECT_NE(std::string(e.what()).find("format version " + std::to_string(kRecordingFormatVersion) +
                                       " after one of version 1"),
            std::string::npos)
      << e.what();
}

}  // namespace
}  // namespace reheap::recording_log_test
