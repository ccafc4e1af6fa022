// A recorded reactor's heap keeps its free page runs when its worker idles (the worker purges
// those of other reactors, zone.h "Retention"): purged pages read as zero, and the replay, which
// runs without the idle pause, must read the same bytes at every event.
#include <gtest/gtest.h>

#include <chrono>
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

// Each Churn allocates sixteen page runs, writes them, and frees every other one: free page runs
// full of its bytes, which the digest of its heap reads.
class Churner : public Reactor {
 public:
  Churner() {
    handle<&Churner::on_churn>();
    // The chunk the runs will be carved from, taken now, before the recording starts: where a
    // chunk taken during a replay lies depends on what the zone of the replaying process holds.
    delete[] new char[256 * 1024];
  }

 private:
  void on_churn(const Churn& c) {
    for (int i = 0; i < 16; ++i) {
      char* p = new char[256 * 1024];
      std::memset(p, static_cast<int>(c.round + 1), 256 * 1024);
      if (i % 2 == 0) {
        delete[] p;
      } else {
        kept_.push_back(p);
      }
    }
  }
  std::vector<char*> kept_;
};

// Disabled: a recorded reactor that allocates page runs diverges at its first such event in a
// replay (the heap's digest differs), with or without this purge and on the build before it; the
// cause is not found yet (README, "Open work").
TEST(ReplayPurge, DISABLED_ARecordedReactorsFreePagesAreNotPurgedWhileItsWorkerIdles) {
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
    for (std::uint32_t round = 0; round < 3; ++round) {
      ASSERT_EQ(rt.send(churner, Churn{round}), reheap::SendResult::kOk);
      ASSERT_EQ(rt.send(plain, Churn{round}), reheap::SendResult::kOk);
      ASSERT_TRUE(rt.wait_idle());
      std::this_thread::sleep_for(std::chrono::milliseconds(800));  // the worker purges after 500 ms
    }
    EXPECT_EQ(rt.dump_recording(churner, dump), dump);
  }
  Replay replay = Replay::open(dump);
  EXPECT_EQ(replay.recorded_events(), 4u);  // on_start and three rounds
  EXPECT_EQ(replay.run(), replay.recorded_events()) << "the heap read differently at some event";
}

}  // namespace
}  // namespace replay_test::purge
