// examples/readme/replay_test.cpp: record a reactor under a real runtime, then replay its
// recording in a GoogleTest test, event by event, and read its state between events.
#include <gtest/gtest.h>
#include <reheap/runtime.h>
#include <reheap/testing/replay.h>

#include <unistd.h>

#include <filesystem>
#include <string>

struct Add { int amount; };

class Counter : public reheap::Reactor {
 public:
  Counter() { handle<&Counter::on_add>(); }
  void on_add(const Add& add) { total_ += add.amount; }
  int total() const { return total_; }

 private:
  int total_ = 0;
};

TEST(Counter, ReplaysItsRecordingToTheSameTotal) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "counter-";
  dir += std::to_string(getpid());
  reheap::ActorRef counter;
  {
    reheap::Runtime runtime;
    reheap::SpawnOptions options;
    options.recording.mode = reheap::RecordingMode::kFile;   // an anchor snapshot and a log
    options.recording.directory = dir;
    counter = runtime.spawn<Counter>(options);
    for (int i = 1; i <= 3; ++i) runtime.send(counter, Add{i});
    ASSERT_TRUE(runtime.wait_idle());
  }  // shut down: the log ends with on_stop, and the heap's addresses are free again
  std::filesystem::path recording = dir / "reactor-";
  recording += std::to_string(counter.value());
  auto replay = reheap::testing::Replay::open(recording);     // a crash bundle opens the same way
  replay.run_to(3);                                           // on_start and two Adds
  EXPECT_EQ(replay.reactor<Counter>().total(), 3);
  replay.run();                                               // every send checked as it goes
  EXPECT_EQ(replay.reactor<Counter>().total(), 6);
  std::filesystem::remove_all(dir);
}
