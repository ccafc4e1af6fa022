// The state oracle in a relocated replay: a ClockKeeper (program/clock_keeper.h) recorded by
// replay_program, another executable, is replayed here, where the heap's pointers into the program
// are relocated by symbol. Its digests still compare, so the time it keeps without the runtime
// knowing - state that no output shows - is caught at the event that read it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "bundle_kit.h"
#include "program/clock_keeper.h"
#include "reheap/testing/replay.h"
#include "replay_support.h"

namespace replay_test {
namespace {

using reheap::testing::Divergence;
using reheap::testing::DivergenceKind;
using reheap::testing::Replay;

#if defined(REHEAP_REPLAY_PROGRAM)

TEST(RelocatedReplayState, DigestsCompareInAnotherBinaryAndCatchAClockReadOutsideTheRuntime) {
  TempDir dir;
  const std::filesystem::path bundle = record_bundle(dir.path(), 0, {"REPLAY_PROGRAM_CLOCK=1"});
  ASSERT_FALSE(bundle.empty());

  Replay replay = Replay::open(bundle);
  EXPECT_FALSE(replay.same_build());
  ASSERT_TRUE(replay.compares_state()) << (replay.warnings().empty() ? "" : replay.warnings().front());
  // Events: 1 on_start, 2 tick 1, 3 tick 2 (reads the clock), 4 tick 3, 5 tick 0 (throws).
  ASSERT_EQ(replay.recorded_events(), 5u);
  ASSERT_EQ(replay.events()[2].kind, reheap::EventKind::kMessage);

  // The events before the clock was read match the recording, digest for digest.
  replay.run_to(2);
  EXPECT_EQ(replay.reactor<ClockKeeper>().ticks(), std::vector<std::uint32_t>{1});
  try {
    replay.step();
    FAIL() << "the kept time was not noticed";
  } catch (const Divergence& d) {
    EXPECT_EQ(d.kind(), DivergenceKind::kState);
    EXPECT_EQ(d.event(), 3u);
    const std::string report = d.what();
    EXPECT_NE(report.find("diverged at event 3"), std::string::npos) << report;
    EXPECT_NE(report.find("it matched after event 2"), std::string::npos) << report;
  }
}

TEST(RelocatedReplayState, TheDivergenceListsOnlyThePageThatReallyDiffers) {
  TempDir dir;
  const std::filesystem::path bundle = record_bundle(dir.path(), 0, {"REPLAY_PROGRAM_CLOCK=1"});
  ASSERT_FALSE(bundle.empty());
  reheap::testing::ReplayOptions options;
  options.snapshots = {dir.path() / "after-tick-2.snap"};  // the recorded heap after event 3
  Replay replay = Replay::open(bundle, options);
  ASSERT_TRUE(replay.compares_state());
  replay.run_to(2);
  try {
    replay.step();
    FAIL() << "the kept time was not noticed";
  } catch (const Divergence& d) {
    ASSERT_EQ(d.event(), 3u);
    // The heap was relocated into this binary: its vtable and handler pointers hold other values
    // than the recorded ones, yet only the time kept differs, in at most its 8 bytes.
    const std::string report = d.what();
    EXPECT_NE(report.find("1 page differ from " + (dir.path() / "after-tick-2.snap").string()), std::string::npos)
        << report;
    const std::size_t line = report.find("bytes differ, from offset");
    ASSERT_NE(line, std::string::npos) << report;
    const std::size_t count_end = report.rfind(" bytes differ", line);
    const std::size_t count_start = report.rfind(": ", count_end) + 2;
    const int bytes = std::stoi(report.substr(count_start, count_end - count_start));
    EXPECT_GE(bytes, 1) << report;
    EXPECT_LE(bytes, 8) << report;
  }
}

TEST(RelocatedReplayState, FromTheRecordedTimeOnTheHeapMatchesAgain) {
  TempDir dir;
  const std::filesystem::path bundle = record_bundle(dir.path(), 0, {"REPLAY_PROGRAM_CLOCK=1"});
  ASSERT_FALSE(bundle.empty());
  reheap::testing::ReplayOptions options;
  options.snapshots = {dir.path() / "after-tick-2.snap", dir.path() / "after-tick-3.snap"};
  Replay replay = Replay::open(bundle, options);
  replay.seek(3);  // the recorded heap after the clock read: it holds the recorded time
  ASSERT_EQ(replay.last_seek_restored(), 3u);
  try {
    replay.step();
  } catch (const Divergence& d) {
    FAIL() << d.what();
  }
  EXPECT_EQ(replay.reactor<ClockKeeper>().ticks(), (std::vector<std::uint32_t>{1, 2, 3}));
}

TEST(RelocatedReplayState, WithoutHiddenStateEveryDigestMatchesToTheRecordedFailure) {
  TempDir dir;
  const std::filesystem::path bundle = record_bundle(dir.path(), 0, {"REPLAY_PROGRAM_CLOCK=still"});
  ASSERT_FALSE(bundle.empty());
  g_keep_time = false;
  Replay replay = Replay::open(bundle);
  ASSERT_TRUE(replay.compares_state());
  try {
    replay.run();
    FAIL() << "the recorded failure did not recur";
  } catch (const Divergence& d) {
    FAIL() << d.what();
  } catch (const reheap::testing::ReplayedFailure&) {
  }
  g_keep_time = true;
  EXPECT_EQ(replay.position(), 5u);
  EXPECT_EQ(replay.reactor<ClockKeeper>().ticks(), (std::vector<std::uint32_t>{1, 2, 3}));
}

TEST(RelocatedReplayState, WithoutTheStateOracleTheKeptTimeGoesUnnoticed) {
  // No output shows the time kept: with state digests not compared, the replay passes it.
  TempDir dir;
  const std::filesystem::path bundle = record_bundle(dir.path(), 0, {"REPLAY_PROGRAM_CLOCK=1"});
  ASSERT_FALSE(bundle.empty());
  reheap::testing::ReplayOptions unchecked;
  unchecked.check_state = false;
  Replay replay = Replay::open(bundle, unchecked);
  EXPECT_FALSE(replay.compares_state());
  replay.run_to(4);
  EXPECT_EQ(replay.reactor<ClockKeeper>().ticks(), (std::vector<std::uint32_t>{1, 2, 3}));
}

#endif

}  // namespace
}  // namespace replay_test
