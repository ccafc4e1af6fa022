// A recorded reactor that the placement policy moves to another worker mid-recording replays to
// the same outputs and heap: placement is not an input (runtime.h, "Placement").
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>

#include "reheap/testing/replay.h"
#include "replay_support.h"

namespace replay_test::placement {
namespace {

using reheap::testing::Replay;

struct Ball {
  std::uint32_t value;
};

// Sends every Ball back to whoever sent it.
class Wall : public Reactor {
 public:
  Wall() { handle<&Wall::on_ball>(); }
  void on_message(const reheap::Message& m) override {
    from_ = m.sender();
    Reactor::on_message(m);
  }

 private:
  void on_ball(const Ball& b) { send(from_, b); }
  ActorRef from_;
};

// Plays `rounds` volleys against the wall, keeping a running sum of what came back in its heap.
class Volley : public Reactor {
 public:
  Volley(ActorRef wall, std::uint32_t rounds) : wall_(wall), rounds_(rounds) {
    handle<&Volley::on_ball>();
  }
  void on_start() override { send(wall_, Ball{1}); }
  std::uint64_t sum() const { return sum_; }

 private:
  void on_ball(const Ball& b) {
    sum_ += b.value;
    if (b.value < rounds_) send(wall_, Ball{b.value + 1});
  }
  ActorRef wall_;
  std::uint32_t rounds_;
  std::uint64_t sum_ = 0;
};

TEST(ReplayPlacement, ARecordedReactorMovedByThePlacementPolicyReplaysToTheSameOutputsAndHeap) {
  constexpr std::uint32_t kRounds = 2'000;
  TempDir dir;
  const std::filesystem::path dump = dir.path() / "dump";
  {
    reheap::RuntimeConfig config;
    config.workers = 2;
    reheap::Runtime rt(config);
    // Neither is given a worker: round robin starts them apart, and the policy may move either.
    const ActorRef wall = rt.spawn<Wall>();
    reheap::SpawnOptions options;
    options.recording = file_recording({});
    options.recording.mode = reheap::RecordingMode::kRing;
    const ActorRef volley = rt.spawn<Volley>(options, wall, kRounds);
    ASSERT_TRUE(rt.wait_idle());  // a volley is always in flight until the last one
    EXPECT_GE(rt.stats().placement_moves, 1u) << "the pair was not brought together";
    EXPECT_EQ(rt.stats(volley).worker, rt.stats(wall).worker);
    EXPECT_EQ(rt.dump_recording(volley, dump), dump);
  }
  Replay replay = Replay::open(dump);
  EXPECT_EQ(replay.recorded_events(), 1u + kRounds);  // on_start and every ball
  EXPECT_EQ(replay.run(), replay.recorded_events());  // outputs and heap checked at every event
  EXPECT_EQ(replay.reactor<Volley>().sum(), std::uint64_t{kRounds} * (kRounds + 1) / 2);
}

}  // namespace
}  // namespace replay_test::placement
