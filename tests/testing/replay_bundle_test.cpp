// Crash bundles replayed in a test (the recorded failure recurs at its event, and a fixed
// reactor passes the same recording; a bundle cut short before its failure, or with files that
// are not regular files, does not open), replay_main_if_asked, new inputs after a recording
// (Replay::continue_in) and seeking among snapshots.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <future>
#include <sstream>
#include <string>

#include "reheap/testing/replay.h"
#include "reheap/testing/test_runtime.h"
#include "replay_support.h"

namespace replay_test {
namespace {

using reheap::testing::ReactorFailure;
using reheap::testing::Replay;
using reheap::testing::ReplayedFailure;
using reheap::testing::ReplayOptions;
using reheap::testing::TestRuntime;

struct Order {
  std::uint32_t n;
};

// Whether Fragile has its bug fixed: the "fixed build" of a test (the bug is the same code).
bool g_fragile_fixed = false;

// Keeps the orders it took; order 0 throws (the bug), unless fixed, when it is refused.
class Fragile : public Reactor {
 public:
  Fragile() { handle<&Fragile::on_order>(); }
  void on_order(const Order& o) {
    if (o.n == 0) {
      if (!g_fragile_fixed) throw std::runtime_error("order 0 is not allowed");
      ++refused_;
      return;
    }
    orders_.push_back(o.n * 10);
  }
  const std::vector<std::uint32_t>& orders() const { return orders_; }
  std::uint32_t refused() const { return refused_; }

 private:
  std::vector<std::uint32_t> orders_;
  std::uint32_t refused_ = 0;
};

// Records Fragile taking orders 1, 2, 3 and then 0: event 5 (after on_start) fails and leaves
// reactor-<ref>/crash-5/.
std::filesystem::path record_crash(const std::filesystem::path& directory) {
  reheap::RuntimeConfig config;
  config.workers = 2;
  reheap::Runtime rt(config);
  reheap::SpawnOptions options;
  options.recording = file_recording(directory);
  const ActorRef r = rt.spawn<Fragile>(options);
  for (std::uint32_t n : {1u, 2u, 3u, 0u}) EXPECT_EQ(rt.send(r, Order{n}), reheap::SendResult::kOk);
  EXPECT_TRUE(rt.wait_idle());
  const std::filesystem::path bundle = recording_of(directory, r) / "crash-5";
  EXPECT_TRUE(std::filesystem::exists(bundle / "manifest.json"));
  return bundle;
}

TEST(ReplayCrashBundle, TheRecordedFailureRecursAtItsEventWithTheStateJustBeforeItReadable) {
  TempDir dir;
  const std::filesystem::path bundle = record_crash(dir.path());
  Replay replay = Replay::open(bundle);
  ASSERT_EQ(replay.failing_event(), std::optional<std::uint64_t>(5));
  EXPECT_EQ(replay.recorded_events(), 5u);
  EXPECT_TRUE(replay.events().back().failed);

  replay.run_to(4);
  EXPECT_EQ(replay.reactor<Fragile>().orders(), (std::vector<std::uint32_t>{10, 20, 30}));
  try {
    replay.step();
    FAIL() << "the failure did not recur";
  } catch (const ReplayedFailure& f) {
    EXPECT_EQ(f.event(), 5u);
    EXPECT_EQ(f.reactor(), replay.reactor_ref());
    EXPECT_EQ(f.hook(), "on_message");
    EXPECT_EQ(f.exception(), "order 0 is not allowed");
    EXPECT_EQ(f.recorded_hook(), "on_message");
    EXPECT_EQ(f.recorded_what(), "order 0 is not allowed");
  }
  EXPECT_EQ(replay.position(), 5u);
  EXPECT_THROW(replay.step(), std::logic_error);
  // seek() goes back to before the failure; the failure recurs again.
  replay.seek(4);
  EXPECT_EQ(replay.reactor<Fragile>().orders().size(), 3u);
  EXPECT_THROW(replay.run(), ReactorFailure);
}

TEST(ReplayCrashBundle, AFixedReactorPassesTheSameRecording) {
  TempDir dir;
  const std::filesystem::path bundle = record_crash(dir.path());
  g_fragile_fixed = true;
  struct Unfix {
    ~Unfix() { g_fragile_fixed = false; }
  } unfix;
  Replay replay = Replay::open(bundle);
  EXPECT_EQ(replay.run(), 5u);
  EXPECT_EQ(replay.reactor<Fragile>().refused(), 1u);
  EXPECT_EQ(replay.reactor<Fragile>().orders().size(), 3u);
}

TEST(ReplayCrashBundle, AReactorRestartedAfterTheFailureIsReplayedFromItsNewAnchor) {
  TempDir dir;
  std::filesystem::path reactor_dir;
  {
    reheap::RuntimeConfig config;
    config.workers = 2;
    reheap::Runtime rt(config);
    reheap::SpawnOptions options;
    options.policy = reheap::SupervisionPolicy::kRestart;
    options.recording = file_recording(dir.path());
    const ActorRef r = rt.spawn<Fragile>(options);
    for (std::uint32_t n : {1u, 2u, 3u, 0u, 7u}) EXPECT_EQ(rt.send(r, Order{n}), reheap::SendResult::kOk);
    EXPECT_TRUE(rt.wait_idle());
    reactor_dir = recording_of(dir.path(), r);
  }
  ASSERT_TRUE(std::filesystem::exists(reactor_dir / "crash-5" / "manifest.json"));
  // The first incarnation's recording ends with the failure; the restarted one has its own.
  {
    Replay first = Replay::open(reactor_dir);
    EXPECT_EQ(first.failing_event(), std::optional<std::uint64_t>(5));
    EXPECT_THROW(first.run(), ReplayedFailure);
  }  // its heap goes: a process holds one heap of a recording at a time
  Replay restarted = Replay::open(reactor_dir / "restart-1");
  EXPECT_EQ(restarted.anchor_events(), 4u);  // restarted exactly: just before the failing event
  EXPECT_EQ(restarted.events().front().kind, reheap::EventKind::kMessage);  // no on_restored: nothing lost
  restarted.run();
  EXPECT_EQ(restarted.reactor<Fragile>().orders(), (std::vector<std::uint32_t>{10, 20, 30, 70}));
}

TEST(ReplayCrashBundle, ReplayMainIfAskedReplaysTheBundleNamedByTheEnvironment) {
  TempDir dir;
  const std::filesystem::path bundle = record_crash(dir.path());
  char name[] = "program";
  char* argv[] = {name, nullptr};
  ASSERT_EQ(::unsetenv("REHEAP_REPLAY"), 0);
  EXPECT_EQ(reheap::testing::replay_main_if_asked(1, argv), std::nullopt);

  const std::filesystem::path report = dir.path() / "report";
  ASSERT_EQ(::setenv("REHEAP_REPLAY", bundle.c_str(), 1), 0);
  ASSERT_EQ(::setenv("REHEAP_REPLAY_REPORT", report.c_str(), 1), 0);
  ::testing::internal::CaptureStdout();
  const std::optional<int> status = reheap::testing::replay_main_if_asked(1, argv);
  const std::string out = ::testing::internal::GetCapturedStdout();
  ::unsetenv("REHEAP_REPLAY");
  ::unsetenv("REHEAP_REPLAY_REPORT");
  EXPECT_EQ(status, std::optional<int>(1));
  EXPECT_NE(out.find("events 1 to 5"), std::string::npos) << out;
  EXPECT_NE(out.find("event 5 failed in on_message: order 0 is not allowed"), std::string::npos) << out;
  std::ifstream in(report);
  std::stringstream lines;
  lines << in.rdbuf();
  // The failing event is announced before it is delivered: a fatal signal would end the process there.
  EXPECT_EQ(lines.str(), "replaying\ndelivering failing event 5\nstatus 1\n");
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
}

// The RecordingError Replay::open(bundle) throws, or a test failure if it opens. A FIFO it would
// block on (the bug this guards against) is unblocked by opening its other end after a bounded
// wait, so that a regression fails the test instead of hanging the suite.
std::optional<reheap::RecordingError> open_error(const std::filesystem::path& bundle,
                                                 const std::filesystem::path& fifo = {}) {
  auto opening = std::async(std::launch::async, [&]() -> std::optional<reheap::RecordingError> {
    try {
      Replay::open(bundle);
    } catch (const reheap::RecordingError& e) {
      return e;
    }
    return std::nullopt;
  });
  if (opening.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "Replay::open blocked on " << fifo;
    const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) ::close(writer);
  }
  std::optional<reheap::RecordingError> error = opening.get();
  if (!error) ADD_FAILURE() << "Replay::open(" << bundle << ") opened";
  return error;
}

// A bundle whose log does not reach its failing event would replay "without a failure", as if
// the bug were fixed: open() refuses it, whether the log is cut after its header, at a block
// boundary or inside a block, or the manifest names an event the log does not mark failed.
TEST(ReplayIncompleteBundle, ALogThatDoesNotReachTheFailingEventDoesNotOpen) {
  TempDir dir;
  const std::filesystem::path bundle = record_crash(dir.path());
  const std::filesystem::path log = bundle / "log-1.rlog";
  const std::string whole = read_text(log);
  std::uint32_t header = 0;
  std::memcpy(&header, whole.data() + 12, 4);
  const std::string manifest = read_text(bundle / "manifest.json");
  struct Case {
    std::size_t cut;
    std::string failing;
    std::string expected;
  };
  for (const Case& c : {Case{header, "5", "the log ends at event 0 (it holds no event), before the failing event 5"},
                        Case{header + 10, "5", "before the failing event 5 the manifest names: the bundle was cut short"},
                        Case{whole.size() - 1, "5", "before the failing event 5 the manifest names: the bundle was cut short"},
                        Case{whole.size(), "4", "the log does not mark event 4, the failing event the manifest"},
                        Case{whole.size(), "9", "the log ends at event 5, before the failing event 9"}}) {
    SCOPED_TRACE("cut at " + std::to_string(c.cut) + ", failing event " + c.failing);
    write_text(log, whole.substr(0, c.cut));
    std::string changed = manifest;
    changed.replace(changed.find("\"failing_event\": 5"), 18, "\"failing_event\": " + c.failing);
    write_text(bundle / "manifest.json", changed);
    const std::optional<reheap::RecordingError> e = open_error(bundle);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->code(), reheap::RecordingErrc::kIncomplete) << e->what();
    EXPECT_NE(std::string(e->what()).find(c.expected), std::string::npos) << e->what();
  }
}

TEST(ReplayIncompleteBundle, ReplayMainIfAskedGivesAnIncompleteBundleItsOwnStatus) {
  TempDir dir;
  const std::filesystem::path bundle = record_crash(dir.path());
  const std::string whole = read_text(bundle / "log-1.rlog");
  std::uint32_t header = 0;
  std::memcpy(&header, whole.data() + 12, 4);
  write_text(bundle / "log-1.rlog", whole.substr(0, header));
  char name[] = "program";
  char* argv[] = {name, nullptr};
  const std::filesystem::path report = dir.path() / "report";
  write_text(report, "");
  ASSERT_EQ(::setenv("REHEAP_REPLAY", bundle.c_str(), 1), 0);
  ASSERT_EQ(::setenv("REHEAP_REPLAY_REPORT", report.c_str(), 1), 0);
  ::testing::internal::CaptureStdout();
  const std::optional<int> status = reheap::testing::replay_main_if_asked(1, argv);
  const std::string out = ::testing::internal::GetCapturedStdout();
  ::unsetenv("REHEAP_REPLAY");
  ::unsetenv("REHEAP_REPLAY_REPORT");
  EXPECT_EQ(status, std::optional<int>(4));
  EXPECT_NE(out.find("error: " + bundle.string() + ": the log ends at event 0"), std::string::npos) << out;
  EXPECT_EQ(out.find("without a failure"), std::string::npos) << out;
  EXPECT_EQ(read_text(report), "replaying\nstatus 4\n");
}

// Under a bundle's names only regular files are read, and a manifest only up to its bound: each
// refusal names the file and what it is, and none blocks.
TEST(ReplayBundleFiles, OnlyRegularFilesAreReadAndAManifestOnlyUpToItsBound) {
  TempDir dir;
  const std::filesystem::path bundle = record_crash(dir.path());
  const std::string manifest = read_text(bundle / "manifest.json");
  const std::string log = read_text(bundle / "log-1.rlog");

  std::filesystem::remove(bundle / "manifest.json");
  ASSERT_EQ(::mkfifo((bundle / "manifest.json").c_str(), 0600), 0);
  std::optional<reheap::RecordingError> e = open_error(bundle, bundle / "manifest.json");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code(), reheap::RecordingErrc::kIo);
  EXPECT_NE(std::string(e->what()).find("manifest.json: is a FIFO, not a regular file"), std::string::npos) << e->what();

  std::filesystem::remove(bundle / "manifest.json");
  std::filesystem::create_directory(bundle / "manifest.json");
  e = open_error(bundle);
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(std::string(e->what()).find("manifest.json: is a directory, not a regular file"), std::string::npos)
      << e->what();

  // A manifest is small: a large file is refused by its size before its bytes are read.
  std::filesystem::remove(bundle / "manifest.json");
  write_text(bundle / "manifest.json", manifest);
  std::filesystem::resize_file(bundle / "manifest.json", std::uintmax_t{8} << 20);
  e = open_error(bundle);
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(std::string(e->what()).find("manifest.json: is 8388608 bytes, more than a crash bundle's manifest can "
                                        "be (at most 1048576 bytes)"),
            std::string::npos)
      << e->what();

  write_text(bundle / "manifest.json", manifest);
  std::filesystem::remove(bundle / "log-1.rlog");
  ASSERT_EQ(::mkfifo((bundle / "log-1.rlog").c_str(), 0600), 0);
  e = open_error(bundle, bundle / "log-1.rlog");
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(std::string(e->what()).find("log-1.rlog: is a FIFO, not a regular file"), std::string::npos) << e->what();

  // A dangling manifest.json still makes the directory a bundle: it is not opened as a plain
  // recording, which would ignore the failing event.
  std::filesystem::remove(bundle / "log-1.rlog");
  write_text(bundle / "log-1.rlog", log);
  std::filesystem::remove(bundle / "manifest.json");
  std::filesystem::create_symlink(dir.path() / "nowhere", bundle / "manifest.json");
  e = open_error(bundle);
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(std::string(e->what()).find("manifest.json: cannot open the file: No such file or directory"),
            std::string::npos)
      << e->what();
}

// A manifest's fields are checked for type and range, and an error names the field.
TEST(ReplayBundleFiles, AManifestsBadFieldIsNamed) {
  TempDir dir;
  const std::filesystem::path bundle = record_crash(dir.path());
  const std::string manifest = read_text(bundle / "manifest.json");
  struct Case {
    std::string from, to, expected;
  };
  for (const Case& c :
       {Case{"\"failing_event\": 5", "\"failing_event\": 99999999999999999999999",
             "the crash bundle manifest's \"failing_event\" is 99999999999999999999999, more than 64 bits hold"},
        Case{"\"failing_event\": 5", "\"failing_event\": \"5\"",
             "the crash bundle manifest's \"failing_event\" is a string, not an integer"},
        Case{"\"anchor\": \"base-0.snap\"", "\"anchor\": \"/etc/passwd\"",
             "the crash bundle manifest's \"anchor\" is \"/etc/passwd\", not the name of a file in the bundle"},
        Case{"\"hook\": \"on_message\"", "\"hook\": \"on_\\uzz00\"", "a \\u escape without four hex digits"},
        Case{"\"hook\": \"on_message\"", "\"hook\": \"on_\\u0000\"", "a NUL character (\\u0000) in a string"},
        Case{"\"hook\": \"on_message\"", "\"hook\": \"on_message\", \"hook\": \"on_timer\"",
             "\"hook\" appears twice"}}) {
    SCOPED_TRACE(c.to);
    std::string changed = manifest;
    changed.replace(changed.find(c.from), c.from.size(), c.to);
    write_text(bundle / "manifest.json", changed);
    const std::optional<reheap::RecordingError> e = open_error(bundle);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->code(), reheap::RecordingErrc::kCorrupt) << e->what();
    EXPECT_EQ(e->file(), bundle / "manifest.json");
    EXPECT_NE(std::string(e->what()).find(c.expected), std::string::npos) << e->what();
  }
}

TEST(ReplayAfterTheLog, TheReactorTakesNewMessagesAndFiresItsTimersInATestRuntime) {
  TempDir dir;
  const LedgerRun run = record_ledger(dir.path());
  Replay replay = Replay::open(run.recording);
  replay.run_to(replay.recorded_events() - 1);  // everything but the shutdown's on_stop
  const std::int64_t total = replay.reactor<Ledger>().total();

  TestRuntime rt;
  const ActorRef ledger = replay.continue_in(rt);
  EXPECT_EQ(ledger, run.ledger);
  EXPECT_THROW(replay.reactor<Ledger>(), std::logic_error);
  const ActorRef depositor = rt.spawn<Depositor>(ledger, std::string("new"), 3u);
  rt.run();
  Ledger& l = rt.reactor<Ledger>(ledger);
  EXPECT_EQ(l.deposits(), 2 * kDepositsEach + 3);
  EXPECT_EQ(l.total(), total + 1 + 2 + 3);
  EXPECT_EQ(l.accounts().at("new0").history, (std::vector<std::int64_t>{1}));
  EXPECT_TRUE(rt.alive(depositor));
  EXPECT_FALSE(rt.next_timer().has_value());  // its timer was cancelled in the recording
}

TEST(ReplayAfterTheLog, TimersArmedInTheRecordingFireOnTheTestRuntimesClock) {
  TempDir dir;
  const LedgerRun run = record_ledger(dir.path());
  Replay replay = Replay::open(run.recording);
  replay.run_to(1);  // on_start armed a 1 ms periodic timer
  ASSERT_EQ(replay.reactor<Ledger>().ticks(), 0u);
  TestRuntime rt;
  const ActorRef ledger = replay.continue_in(rt);
  ASSERT_TRUE(rt.next_timer().has_value());
  EXPECT_EQ(*rt.next_timer(), rt.steady_now() + std::chrono::milliseconds(1));
  EXPECT_EQ(rt.advance(std::chrono::milliseconds(10)), 5u);  // five ticks, then it cancels itself
  EXPECT_EQ(rt.reactor<Ledger>(ledger).ticks(), 5u);
  EXPECT_FALSE(rt.next_timer().has_value());
}

// The deposits the ledger has taken after event `index`, from the log's own record of events.
std::uint32_t deposits_after(const Replay& replay, std::uint64_t index) {
  std::uint32_t n = 0;
  for (const reheap::testing::RecordedEvent& e : replay.events()) {
    if (e.index <= index && e.kind == reheap::EventKind::kMessage) ++n;
  }
  return n;
}

TEST(ReplaySeek, GoesToAnyEventFromTheNearestSnapshotAndSaysHowLongItTook) {
  TempDir dir;
  TempDir snapshots;
  const LedgerRun run = record_ledger(dir.path(), snapshots.path());
  ASSERT_EQ(run.snapshots.size(), 3u);
  ReplayOptions options;
  options.snapshots = run.snapshots;
  Replay replay = Replay::open(run.recording, options);
  const std::uint64_t last = replay.recorded_events();
  // The snapshots were taken after on_start and before the end: the first seek starts from one.
  replay.seek(last - 1);
  ASSERT_TRUE(replay.last_seek_restored().has_value());
  EXPECT_GT(*replay.last_seek_restored(), 0u);
  EXPECT_LT(*replay.last_seek_restored(), last);
  replay.seek(last);  // one step on: no snapshot is nearer than where it stands
  EXPECT_FALSE(replay.last_seek_restored().has_value());
  replay.seek(0);  // the anchor
  EXPECT_EQ(replay.last_seek_restored(), std::optional<std::uint64_t>(0));
  // Forward, back, to the anchor itself, and back to the end: each lands on its event, with the
  // state of that event (every heap digest on the way is compared, as in a plain run).
  for (const std::uint64_t target : {last - 1, std::uint64_t{10}, std::uint64_t{250}, std::uint64_t{0}, last}) {
    SCOPED_TRACE("seek(" + std::to_string(target) + ")");
    replay.seek(target);
    EXPECT_EQ(replay.position(), target);
    EXPECT_EQ(replay.reactor<Ledger>().events_delivered(), target);
    EXPECT_EQ(replay.reactor<Ledger>().deposits(), deposits_after(replay, target));
    EXPECT_GT(replay.last_seek_duration().count(), 0);
  }
  EXPECT_THROW(replay.seek(last + 1), std::out_of_range);
}

TEST(ReplaySeek, ASnapshotOfAnotherRecordingIsRefused) {
  TempDir dir;
  TempDir other;
  TempDir snapshots;
  const LedgerRun a = record_ledger(dir.path());
  const LedgerRun b = record_ledger(other.path(), snapshots.path());
  ReplayOptions options;
  options.snapshots = {b.snapshots.front()};
  try {
    Replay::open(a.recording, options);
    FAIL() << "a foreign snapshot was taken";
  } catch (const reheap::RecordingError& e) {
    EXPECT_EQ(e.code(), reheap::RecordingErrc::kMismatch);
    EXPECT_EQ(e.file(), b.snapshots.front());
    EXPECT_NE(std::string(e.what()).find("the snapshot is not of this recording"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace replay_test
