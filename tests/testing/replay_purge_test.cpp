// A recorded reactor's heap keeps its free page runs when its worker idles (the worker purges
// those of other reactors, zone.h "Retention"): purged pages read as zero, and the replay, which
// runs without the idle pause, must read the same bytes at every event.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "reheap/testing/replay.h"
#include "replay_support.h"

namespace replay_test::purge {
namespace {

using reheap::testing::Replay;

struct Churn {
  std::uint32_t round;
};

// Each Churn allocates sixteen page runs, writes them, and frees every other one when it ends:
// free page runs full of its bytes at idle, which the digest of its heap reads. Each round's runs
// are a page longer than the last round's, so no later round reuses (and overwrites) them: what
// the digest reads there at every later event is whatever idling left in them.
class Churner : public Reactor {
 public:
  // The first Churn takes the large chunk the runs are carved from, during the recording: the
  // replay takes the same one (replay_chunk_test.cpp).
  Churner() { handle<&Churner::on_churn>(); }

 private:
  static constexpr std::size_t kRunBytes = 256 * 1024;

  void on_churn(const Churn& c) {
    const std::size_t bytes = kRunBytes + std::size_t{c.round} * 4096;
    std::vector<char*> made;
    for (int i = 0; i < 16; ++i) {
      made.push_back(new char[bytes]);
      std::memset(made.back(), static_cast<int>(c.round + 1), bytes);
    }
    for (std::size_t i = 0; i < made.size(); ++i) {
      if (i % 2 == 0) {
        delete[] made[i];
      } else {
        kept_.push_back(made[i]);
      }
    }
  }
  std::vector<char*> kept_;
};

// Whether the runtime's idle purges pass `before` within a minute: a worker purges once it has
// been idle half a second (zone.h, "Retention"), which on a loaded machine may come late.
bool purged_since(const reheap::Runtime& rt, std::uint64_t before) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (rt.stats().idle_purges <= before) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

TEST(ReplayPurge, ARecordedReactorsFreePagesAreNotPurgedWhileItsWorkerIdles) {
  TempDir dir;
  const std::filesystem::path dump = dir.path() / "dump";
  {
    reheap::RuntimeConfig config;
    config.workers = 1;
    reheap::Runtime rt(config);
    reheap::SpawnOptions options;
    options.recording = file_recording({});
    options.recording.mode = reheap::RecordingMode::kRing;
    const ActorRef churner = rt.spawn<Churner>(options);
    const ActorRef plain = rt.spawn<Churner>();
    // The purge after the two on_starts comes first, so that each round below is followed by a
    // purge of its own.
    ASSERT_TRUE(rt.wait_idle());
    ASSERT_TRUE(purged_since(rt, 0)) << "the idle worker did not purge after the on_starts";
    for (std::uint32_t round = 0; round < 3; ++round) {
      const std::uint64_t purges = rt.stats().idle_purges;
      ASSERT_EQ(rt.send(churner, Churn{round}), reheap::SendResult::kOk);
      ASSERT_EQ(rt.send(plain, Churn{round}), reheap::SendResult::kOk);
      ASSERT_TRUE(rt.wait_idle());
      ASSERT_TRUE(purged_since(rt, purges)) << "the idle worker did not purge after round " << round;
    }
    EXPECT_EQ(rt.dump_recording(churner, dump), dump);
  }
  Replay replay = Replay::open(dump);
  EXPECT_EQ(replay.recorded_events(), 4u);  // on_start and three rounds
  EXPECT_EQ(replay.run(), replay.recorded_events()) << "the heap read differently at some event";
}

}  // namespace
}  // namespace replay_test::purge
