// A file recording bounded by RecordingOptions::anchor_every_bytes: past the bound a new anchor
// replaces the old one and its log, and what is left replays from the newest anchor.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "reheap/runtime.h"
#include "reheap/testing/replay.h"
#include "replay_support.h"

namespace replay_test {
namespace {

using namespace std::chrono_literals;
using reheap::testing::Replay;

constexpr std::uint32_t kManyDeposits = 3000;  // each; ~0.6 MB of log with payloads: ~9 blocks

struct Files {
  std::vector<std::uint64_t> anchors;  // base-<n>.snap
  std::vector<std::uint64_t> segments; // log-<first event>.rlog
  std::uintmax_t log_bytes = 0;
};

Files files_of(const std::filesystem::path& directory) {
  Files f;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("base-")) f.anchors.push_back(std::stoull(name.substr(5)));
    if (name.starts_with("log-")) {
      f.segments.push_back(std::stoull(name.substr(4)));
      f.log_bytes += entry.file_size();
    }
  }
  return f;
}

TEST(RecordingBound, PastTheBoundANewAnchorReplacesTheOldOneAndWhatIsLeftReplays) {
  TempDir dir;
  ActorRef ledger;
  std::uint64_t recording_errors = 1;
  {
    reheap::RuntimeConfig config;
    config.workers = 2;
    reheap::Runtime rt(config);
    reheap::SpawnOptions options;
    options.worker = 0;
    options.recording = file_recording(dir.path(), reheap::RecordedOutputs::kPayloads, 100);
    options.recording.anchor_every_bytes = 1;  // a new anchor after every block
    ledger = rt.spawn<Ledger>(options);
    reheap::SpawnOptions on1;
    on1.worker = 1;
    rt.spawn<Depositor>(on1, ledger, std::string("a"), kManyDeposits);
    rt.spawn<Depositor>(ledger, std::string("b"), kManyDeposits);
    ASSERT_TRUE(wait_for_every_event(rt, ledger, kManyDeposits));
    ASSERT_TRUE(rt.wait_idle());
    recording_errors = rt.stats(ledger).recording_errors;
  }
  EXPECT_EQ(recording_errors, 0u);

  const std::filesystem::path recording = recording_of(dir.path(), ledger);
  const Files files = files_of(recording);
  ASSERT_EQ(files.anchors.size(), 1u) << "older anchors are deleted";
  const std::uint64_t anchor = files.anchors.front();
  EXPECT_GT(anchor, 1000u) << "the recording was re-anchored as it went";
  ASSERT_FALSE(files.segments.empty());
  for (const std::uint64_t first : files.segments) EXPECT_GT(first, anchor) << "a segment of an older anchor is left";
  EXPECT_LE(files.log_bytes, 3u * 64 * 1024) << "the log since the newest anchor is about a block";

  Replay replay = Replay::open(recording);
  EXPECT_EQ(replay.anchor_events(), anchor);
  const std::uint64_t last = 1 + 2 * std::uint64_t{kManyDeposits} + 5 + 1;  // start, deposits, ticks, stop
  EXPECT_EQ(replay.recorded_events(), last);
  replay.run_to(last - 1);  // every output and state digest checked on the way
  EXPECT_EQ(replay.reactor<Ledger>().deposits(), 2 * kManyDeposits);
  EXPECT_EQ(replay.reactor<Ledger>().total(), 2 * (std::int64_t{kManyDeposits} * (kManyDeposits + 1) / 2));
}

}  // namespace
}  // namespace replay_test
