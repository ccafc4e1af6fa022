// Replay of a recorded reactor (reheap/testing/replay.h): a ledger recorded under a real
// multi-worker runtime replays to the same outputs and the same heap at every event; a reactor
// that reads the clock directly diverges at the event that read it; damaged, foreign and
// other-build logs are each refused or reported clearly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "reheap/recording_log.h"
#include "reheap/testing/replay.h"
#include "replay_support.h"

namespace replay_test {
namespace {

using reheap::EventKind;
using reheap::RecordingErrc;
using reheap::RecordingError;
using reheap::testing::Divergence;
using reheap::testing::DivergenceKind;
using reheap::testing::Replay;
using reheap::testing::ReplayOptions;

TEST(Replay, ALedgerRecordedUnderConcurrentSendersReplaysToTheSameOutputsAndHeapAtEveryEvent) {
  TempDir dir;
  const LedgerRun run = record_ledger(dir.path());
  Replay replay = Replay::open(run.recording);
  EXPECT_EQ(replay.reactor_ref(), run.ledger);
  EXPECT_TRUE(replay.same_build());
  EXPECT_TRUE(replay.warnings().empty());
  EXPECT_TRUE(replay.compares_state());  // state_hash_every = 1, and this process recorded it
  EXPECT_EQ(replay.anchor_events(), 0u);
  // on_start, 2 x 200 deposits, 5 ticks, on_stop (the runtime's shutdown).
  ASSERT_EQ(replay.recorded_events(), 1u + 2 * kDepositsEach + 5 + 1);
  EXPECT_EQ(replay.events().front().kind, EventKind::kStart);
  EXPECT_EQ(replay.events().back().kind, EventKind::kStop);
  EXPECT_EQ(replay.position(), 0u);

  // Every send's bytes and every heap digest are compared after each event: a difference throws.
  EXPECT_EQ(replay.run(), replay.recorded_events());
  EXPECT_TRUE(replay.at_end());
  EXPECT_FALSE(replay.step());

  const Ledger& ledger = replay.reactor<Ledger>();
  EXPECT_EQ(ledger.deposits(), 2 * kDepositsEach);
  EXPECT_EQ(ledger.ticks(), 5u);
  EXPECT_EQ(ledger.accounts().size(), 14u);
  EXPECT_EQ(ledger.total(), 2 * static_cast<std::int64_t>(kDepositsEach * (kDepositsEach + 1) / 2));
  EXPECT_EQ(ledger.notes(), 2 * kDepositsEach);
  // One receipt per deposit, and the auditor told every 50th: 400 + 8 sends, all answered kOk.
  ASSERT_EQ(replay.sends().size(), 2 * kDepositsEach + 8);
  std::size_t to_auditor = 0;
  for (const reheap::testing::ReplayedSend& s : replay.sends()) {
    EXPECT_EQ(s.result, reheap::SendResult::kOk);
    EXPECT_EQ(s.type_id, reheap::message_type_id<Receipt>());
    if (s.event == 0 || s.to == ActorRef()) ADD_FAILURE() << "a send without its event or target";
    to_auditor += replay.events()[s.event - 1].sender == s.to ? 0 : 1;
  }
  EXPECT_EQ(to_auditor, 8u);
}

TEST(Replay, StepsRunsToAnEventAndUntilAPredicateWithTheReactorReadableBetween) {
  TempDir dir;
  const LedgerRun run = record_ledger(dir.path());
  Replay replay = Replay::open(run.recording);
  ASSERT_TRUE(replay.step());  // on_start
  EXPECT_EQ(replay.position(), 1u);
  EXPECT_EQ(replay.reactor<Ledger>().deposits(), 0u);
  EXPECT_EQ(replay.reactor<Ledger>().events_delivered(), 1u);

  // The deposits before event 101, whatever the ticks among them.
  replay.run_to(101);
  EXPECT_EQ(replay.position(), 101u);
  std::uint32_t deposits = 0;
  for (std::uint64_t i = 2; i <= 101; ++i) deposits += replay.events()[i - 1].kind == EventKind::kMessage ? 1 : 0;
  EXPECT_EQ(replay.reactor<Ledger>().deposits(), deposits);
  EXPECT_THROW(replay.run_to(50), std::logic_error);
  EXPECT_THROW(replay.run_to(replay.recorded_events() + 1), std::out_of_range);

  Ledger& ledger = replay.reactor<Ledger>();
  EXPECT_TRUE(replay.run_until([&] { return ledger.deposits() == 300; }));
  EXPECT_EQ(ledger.deposits(), 300u);
  EXPECT_FALSE(replay.run_until([] { return false; }));
  EXPECT_TRUE(replay.at_end());
  EXPECT_GT(replay.heap().stats().live_bytes, 0u);
}

// ---- divergence ----

struct Hello {
  std::uint32_t n;
};
struct Stamp {
  std::string label;
  std::int64_t ns = 0;
  MSGPACK_DEFINE(label, ns)
};

// Answers Hello with a constant, except the third one, which it answers with the machine's clock
// read directly - what DETERMINISM.md says breaks a replay.
class ClockReader : public Reactor {
 public:
  ClockReader() { handle<&ClockReader::on_hello>(); }
  void on_hello(const Hello& h) {
    const std::int64_t ns =
        h.n == 3 ? std::chrono::system_clock::now().time_since_epoch().count() : static_cast<std::int64_t>(h.n);
    send(sender(), Stamp{"stamp", ns});
  }
};

// Keeps the clock it read directly in its heap and tells nobody.
class ClockKeeper : public Reactor {
 public:
  ClockKeeper() { handle<&ClockKeeper::on_hello>(); }
  void on_hello(const Hello& h) {
    if (h.n == 2) seen_ = std::chrono::steady_clock::now().time_since_epoch().count();
    count_ += h.n;
  }
  const std::int64_t* seen() const { return &seen_; }

 private:
  std::int64_t seen_ = 0;
  std::uint64_t count_ = 0;
};

template <class R>
std::filesystem::path record_hellos(const std::filesystem::path& directory, std::uint32_t count) {
  reheap::RuntimeConfig config;
  config.workers = 2;
  reheap::Runtime rt(config);
  reheap::SpawnOptions options;
  options.recording = file_recording(directory);
  const ActorRef r = rt.spawn<R>(options);
  // From outside: the answers go to the null reference and are refused, which is recorded too.
  for (std::uint32_t n = 1; n <= count; ++n) EXPECT_EQ(rt.send(r, Hello{n}), reheap::SendResult::kOk);
  EXPECT_TRUE(rt.wait_idle());
  return recording_of(directory, r);
}

TEST(Replay, AReactorReadingTheClockDirectlyDivergesAtTheEventThatSentIt) {
  TempDir dir;
  const std::filesystem::path recording = record_hellos<ClockReader>(dir.path(), 5);
  Replay replay = Replay::open(recording);
  replay.run_to(3);  // on_start, Hello 1, Hello 2: the same as recorded
  try {
    replay.step();  // Hello 3: the clock
    FAIL() << "no divergence";
  } catch (const Divergence& d) {
    EXPECT_EQ(d.kind(), DivergenceKind::kOutput);
    EXPECT_EQ(d.event(), 4u);
    EXPECT_EQ(d.event_kind(), EventKind::kMessage);
    // Both sides decoded: the same label, another time.
    EXPECT_NE(d.expected().find("[\"stamp\","), std::string::npos) << d.expected();
    EXPECT_NE(d.actual().find("[\"stamp\","), std::string::npos) << d.actual();
    EXPECT_NE(d.expected(), d.actual());
    // The message types by their C++ names, not only their ids.
    EXPECT_NE(d.expected().find("::Stamp), msgpack"), std::string::npos) << d.expected();
    const std::string what = d.what();
    EXPECT_NE(what.find("diverged at event 4 (on_message: a message of type 0x"), std::string::npos) << what;
    EXPECT_NE(what.find("::Hello) ("), std::string::npos) << what;
    EXPECT_NE(what.find("the heap matched the recording after event 3"), std::string::npos) << what;
    EXPECT_NE(what.find("run_to(3)"), std::string::npos) << what;
  }
  EXPECT_EQ(replay.position(), 4u);
  EXPECT_THROW(replay.step(), std::logic_error);  // stopped at the divergence
}

TEST(Replay, WithOutputChecksOffTheSameRecordingRunsToItsEndWithTheRecordedAnswers) {
  TempDir dir;
  const std::filesystem::path recording = record_hellos<ClockReader>(dir.path(), 5);
  ReplayOptions options;
  options.check_outputs = false;
  Replay replay = Replay::open(recording, options);
  EXPECT_EQ(replay.run(), 7u);  // on_start, 5 Hellos, on_stop
  ASSERT_EQ(replay.sends().size(), 5u);
  for (const reheap::testing::ReplayedSend& s : replay.sends()) {
    EXPECT_EQ(s.result, reheap::SendResult::kNoSuchReactor);  // as recorded: sent to nobody
  }
}

TEST(Replay, AReactorKeepingTheClockInItsHeapDivergesInStateAfterThatEvent) {
  TempDir dir;
  const std::filesystem::path recording = record_hellos<ClockKeeper>(dir.path(), 4);
  {
    Replay replay = Replay::open(recording);
    ASSERT_TRUE(replay.compares_state());
    try {
      replay.run();
      FAIL() << "no divergence";
    } catch (const Divergence& d) {
      EXPECT_EQ(d.kind(), DivergenceKind::kState);
      EXPECT_EQ(d.event(), 3u);  // on_start, Hello 1, Hello 2
      EXPECT_NE(d.expected().find("heap digest 0x"), std::string::npos);
      EXPECT_NE(std::string(d.what()).find("it matched after event 2"), std::string::npos) << d.what();
    }
  }  // its heap goes: one heap of a snapshot can live in a process at a time
  // Without the state oracle the same replay runs to its end: it sends nothing.
  ReplayOptions no_state;
  no_state.check_state = false;
  Replay blind = Replay::open(recording, no_state);
  EXPECT_FALSE(blind.compares_state());
  EXPECT_EQ(blind.run(), 6u);  // on_start, 4 Hellos, on_stop
}

TEST(Replay, AStateDivergenceListsThePagesThatDifferFromTheRecordedSnapshotAfterThatEvent) {
  TempDir dir;
  const std::filesystem::path after3 = dir.path() / "after-3.snap";
  std::filesystem::path recording;
  {
    reheap::RuntimeConfig config;
    config.workers = 2;
    reheap::Runtime rt(config);
    reheap::SpawnOptions options;
    options.recording = file_recording(dir.path());
    const ActorRef r = rt.spawn<ClockKeeper>(options);
    rt.send(r, Hello{1});
    rt.send(r, Hello{2});  // event 3 keeps the clock
    ASSERT_TRUE(rt.wait_idle());
    rt.snapshot(r, after3);
    rt.send(r, Hello{3});
    ASSERT_TRUE(rt.wait_idle());
    recording = recording_of(dir.path(), r);
  }
  ReplayOptions options;
  options.snapshots = {after3};
  Replay replay = Replay::open(recording, options);
  try {
    replay.run();
    FAIL() << "no divergence";
  } catch (const Divergence& d) {
    EXPECT_EQ(d.kind(), DivergenceKind::kState);
    EXPECT_EQ(d.event(), 3u);
    // One page: the one holding the reactor's copy of the clock.
    const auto seen = reinterpret_cast<std::uintptr_t>(replay.reactor<ClockKeeper>().seen());
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    char expected[64];
    std::snprintf(expected, sizeof expected, "page 0x%llx: ", static_cast<unsigned long long>(seen & ~(page - 1)));
    const std::string what = d.what();
    EXPECT_NE(what.find("pages: 1 page differ from " + after3.string()), std::string::npos) << what;
    EXPECT_NE(what.find(expected), std::string::npos) << what;
    // The first differing byte is one of the clock's 8 (its low bytes, almost surely the first).
    const std::size_t at = what.find("from offset 0x");
    ASSERT_NE(at, std::string::npos) << what;
    const std::uintptr_t first = std::stoull(what.substr(at + 14), nullptr, 16);
    EXPECT_GE(first, seen & (page - 1));
    EXPECT_LT(first, (seen & (page - 1)) + 8);
  }
}

TEST(Replay, ARingRecordingDumpedFromTheRuntimeReplaysToWhereItWasDumped) {
  TempDir dir;
  const std::filesystem::path dump = dir.path() / "dump";
  {
    reheap::RuntimeConfig config;
    config.workers = 2;
    reheap::Runtime rt(config);
    reheap::SpawnOptions options;
    options.recording = file_recording({});
    options.recording.mode = reheap::RecordingMode::kRing;
    const ActorRef r = rt.spawn<ClockKeeper>(options);
    rt.send(r, Hello{1});
    rt.send(r, Hello{3});
    ASSERT_TRUE(rt.wait_idle());
    EXPECT_EQ(rt.dump_recording(r, dump), dump);
    rt.send(r, Hello{4});  // after the dump: not in it
  }
  Replay replay = Replay::open(dump);
  EXPECT_EQ(replay.anchor_events(), 0u);
  EXPECT_EQ(replay.recorded_events(), 3u);  // on_start, Hello 1, Hello 3
  EXPECT_EQ(replay.run(), 3u);
}

// ---- logs that cannot be replayed ----

std::filesystem::path only_log_file(const std::filesystem::path& recording) {
  for (const auto& entry : std::filesystem::directory_iterator(recording)) {
    if (entry.path().extension() == ".rlog") return entry.path();
  }
  ADD_FAILURE() << "no log in " << recording;
  return {};
}

RecordingError open_error(const std::filesystem::path& recording, const ReplayOptions& options = {}) {
  try {
    Replay::open(recording, options);
  } catch (const RecordingError& e) {
    return e;
  }
  ADD_FAILURE() << "Replay::open(" << recording << ") did not throw";
  return RecordingError(RecordingErrc::kIo, {}, 0, "none");
}

// A log cut short at its end (its process killed while it wrote) replays up to its last whole
// event, and the replay says where the log ends and which file was cut.
TEST(ReplayErrors, ATruncatedLogReplaysToItsLastWholeEventAndSaysSo) {
  TempDir dir;
  const std::filesystem::path recording = record_hellos<ClockReader>(dir.path(), 2);
  const std::filesystem::path log = only_log_file(recording);
  std::vector<char> bytes = read_file(log);
  bytes.resize(bytes.size() - 5);
  write_file(log, bytes);
  Replay replay = Replay::open(recording);
  std::string said;
  for (const std::string& w : replay.warnings()) {
    if (w.find("the log ends after event") != std::string::npos) said = w;
  }
  EXPECT_NE(said.find(log.filename().string()), std::string::npos) << said;
  EXPECT_NE(said.find("cut short"), std::string::npos) << said;
  EXPECT_NO_THROW(replay.run());
  EXPECT_EQ(replay.position(), replay.recorded_events());
}

TEST(ReplayErrors, ACorruptLogNamesTheBlockWhoseChecksumFails) {
  TempDir dir;
  const std::filesystem::path recording = record_hellos<ClockReader>(dir.path(), 2);
  const std::filesystem::path log = only_log_file(recording);
  std::vector<char> bytes = read_file(log);
  bytes[bytes.size() - 3] ^= 0x5a;  // inside the last block's body
  write_file(log, bytes);
  const RecordingError e = open_error(recording);
  EXPECT_EQ(e.code(), RecordingErrc::kCorrupt);
  EXPECT_EQ(e.file().filename(), log.filename());
  EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
}

TEST(ReplayErrors, ALogOfAnotherRecordingDoesNotBelongToTheSnapshot) {
  TempDir a;
  TempDir b;
  const std::filesystem::path first = record_hellos<ClockReader>(a.path(), 2);
  const std::filesystem::path second = record_hellos<ClockReader>(b.path(), 2);
  // The first recording's anchor with the second one's log.
  const std::filesystem::path log = only_log_file(first);
  std::filesystem::copy_file(only_log_file(second), log, std::filesystem::copy_options::overwrite_existing);
  const RecordingError e = open_error(first);
  EXPECT_EQ(e.code(), RecordingErrc::kMismatch);
  EXPECT_EQ(e.file().filename(), "base-0.snap");
  EXPECT_NE(std::string(e.what()).find("the snapshot is not of this recording"), std::string::npos) << e.what();
}

TEST(ReplayErrors, ALogOfAnotherBuildIsReplayedWithAWarningOrRefusedWhenAsked) {
  TempDir dir;
  const std::filesystem::path recording = record_hellos<ClockKeeper>(dir.path(), 1);
  // Rewrite the header with another build-id (and a valid checksum): the log of another build.
  const std::filesystem::path log = only_log_file(recording);
  reheap::LogHeader header = reheap::LogReader(log).header();
  std::vector<char> bytes = read_file(log);
  std::uint32_t old_length = 0;
  std::memcpy(&old_length, bytes.data() + 12, 4);
  header.build_id = "0123456789abcdef0123456789abcdef01234567";
  ASSERT_NE(header.build_id, reheap::program_build_id());
  const std::vector<unsigned char> encoded = reheap::encode_log_header(header);
  bytes.erase(bytes.begin(), bytes.begin() + old_length);
  bytes.insert(bytes.begin(), encoded.begin(), encoded.end());
  write_file(log, bytes);

  Replay replay = Replay::open(recording);
  EXPECT_FALSE(replay.same_build());
  EXPECT_EQ(replay.recorded_by_build(), header.build_id);
  ASSERT_FALSE(replay.warnings().empty());
  EXPECT_NE(replay.warnings()[0].find("recorded by build 0123456789abcdef0123456789abcdef01234567"),
            std::string::npos)
      << replay.warnings()[0];
  EXPECT_EQ(replay.run(), 3u);  // on_start, Hello 1, on_stop

  ReplayOptions strict;
  strict.refuse_other_build = true;
  const RecordingError e = open_error(recording, strict);
  EXPECT_EQ(e.code(), RecordingErrc::kMismatch);
  EXPECT_NE(std::string(e.what()).find("this program is build"), std::string::npos) << e.what();
}

TEST(ReplayErrors, ADirectoryWithoutARecordingIsNotOne) {
  TempDir dir;
  const RecordingError e = open_error(dir.path());
  EXPECT_EQ(e.code(), RecordingErrc::kNotARecording);
  EXPECT_NE(std::string(e.what()).find("no anchor snapshot"), std::string::npos) << e.what();
  EXPECT_EQ(std::string(e.what()).find("RecordingOptions::directory"), std::string::npos) << e.what();

  const RecordingError missing = open_error(dir.path() / "nowhere");
  EXPECT_EQ(missing.code(), RecordingErrc::kNotARecording);
  EXPECT_NE(std::string(missing.what()).find("nowhere: does not exist"), std::string::npos) << missing.what();
}

TEST(ReplayErrors, TheRecordingsDirectoryItselfNamesTheRecordingsInIt) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "reactor-42");
  std::filesystem::create_directories(dir.path() / "reactor-43");
  const RecordingError e = open_error(dir.path());
  EXPECT_EQ(e.code(), RecordingErrc::kNotARecording);
  const std::string what = e.what();
  EXPECT_NE(what.find("this is a RecordingOptions::directory: open one of its recordings ("), std::string::npos)
      << what;
  EXPECT_NE(what.find("reactor-42"), std::string::npos) << what;
  EXPECT_NE(what.find("reactor-43"), std::string::npos) << what;
}

}  // namespace
}  // namespace replay_test
