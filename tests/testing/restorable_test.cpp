// REHEAP_RESTORABLE: a program that replays a reactor whose class it never constructs keeps the
// class's code with one line. restorable_recorder (another program) records a Tally; this test
// binary never constructs one (nothing here but the line below names its constructor), replays
// the recording and reads the reactor. restorable_reader is the same replay without the line:
// refused, and the refusal prints the line to write.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "bounded_process.h"
#include "program/restorable_tally.h"
#include "reheap/restorable.h"
#include "reheap/testing/replay.h"
#include "replay_support.h"

REHEAP_RESTORABLE(restorable_test::Tally);

namespace restorable_test {
namespace {

using replay_test::BoundedRun;
using replay_test::run_bounded;

// Runs restorable_recorder into `dir`; the recording's directory, or empty after a test failure.
std::filesystem::path record_tally(const std::filesystem::path& dir) {
#ifdef REHEAP_RESTORABLE_RECORDER
  const BoundedRun recorded = run_bounded({REHEAP_RESTORABLE_RECORDER, dir.string()});
  EXPECT_EQ(recorded.exit_code, 0) << recorded.out;
  const std::size_t at = recorded.out.find(dir.string());
  if (at == std::string::npos) {
    ADD_FAILURE() << "no recording:\n" << recorded.out;
    return {};
  }
  return recorded.out.substr(at, recorded.out.find('\n', at) - at);
#else
  static_cast<void>(dir);
  ADD_FAILURE() << "built without REHEAP_RESTORABLE_RECORDER";
  return {};
#endif
}

TEST(Restorable, ATestThatNeverConstructsTheClassReplaysItWithTheLine) {
  replay_test::TempDir dir;
  const std::filesystem::path recording = record_tally(dir.path());
  ASSERT_FALSE(recording.empty());
  reheap::testing::Replay replay = reheap::testing::Replay::open(recording);
  replay.run();
  EXPECT_EQ(replay.reactor<Tally>().total(), 6);
}

TEST(Restorable, WithoutTheLineTheReplayIsRefusedWithTheLineToWrite) {
#ifdef REHEAP_RESTORABLE_READER
  replay_test::TempDir dir;
  const std::filesystem::path recording = record_tally(dir.path());
  ASSERT_FALSE(recording.empty());
  const BoundedRun read = run_bounded({REHEAP_RESTORABLE_READER, recording.string()});
  EXPECT_EQ(read.exit_code, 1) << read.out;
  EXPECT_NE(read.out.find("vtable for restorable_test::Tally"), std::string::npos) << read.out;
  EXPECT_NE(read.out.find("write `REHEAP_RESTORABLE(restorable_test::Tally);` (#include <reheap/restorable.h>)"),
            std::string::npos)
      << read.out;
#else
  GTEST_FAIL() << "built without REHEAP_RESTORABLE_READER";
#endif
}

}  // namespace
}  // namespace restorable_test
