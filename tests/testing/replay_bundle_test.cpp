// Crash bundles replayed in a test (the recorded failure recurs at its event, and a fixed
// reactor passes the same recording), replay_main_if_asked, new inputs after a recording
// (Replay::continue_in) and seeking among snapshots.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
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
