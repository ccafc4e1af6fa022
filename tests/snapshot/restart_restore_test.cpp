// A restarted service restores its own snapshots after it spawned heaps of its own: with a state
// directory, the node's later heaps never take the chunks its saved snapshots hold, however many
// times it restarts (restart_cycle.h is the service; each run is a new process and incarnation).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <string>

#include "cases.h"
#include "support.h"

namespace reheap::snaptest {
namespace {

struct Cycles {
  int runs = 0;
  int collisions = 0;
  std::string first_failure;
};

// Runs the service `runs` times against `data`, its node's state directory `state` (none if
// empty); the n-th run spawns `spawned(n)` heaps first.
template <class Spawned>
Cycles run_cycles(const std::filesystem::path& data, const std::filesystem::path& state, int runs,
                  Spawned spawned) {
  Cycles result;
  for (int n = 0; n < runs; ++n) {
    SpawnOptions options;
    options.extra_env = {"REHEAP_NODE=5"};
    if (!state.empty()) options.extra_env.push_back("REHEAP_STATE_DIR=" + state.string());
    const ChildResult r = run_self({"--restart-cycle", data.string(), std::to_string(spawned(n)),
                                    std::to_string(mix(n, 17))},
                                   options);
    ++result.runs;
    if (r.succeeded()) continue;
    if (WIFEXITED(r.wait_status) && WEXITSTATUS(r.wait_status) == 3) ++result.collisions;
    if (result.first_failure.empty()) result.first_failure = "run " + std::to_string(n) + ": " + r.describe();
    if (!WIFEXITED(r.wait_status) || WEXITSTATUS(r.wait_status) != 3) break;  // not a collision: stop
  }
  return result;
}

// The reported case: the run whose incarnation comes back to the first run's placement window
// (the eighth after it) spawns more heaps than the first did, into the chunks the first run's
// heaps were created in and its snapshots still hold.
TEST(RestartRestore, TheNinthRunOfANodeRestoresItsSnapshotsAfterSpawningHeaps) {
  TempDir dir;
  const auto data = dir / "data";
  std::filesystem::create_directories(data);
  const Cycles c = run_cycles(data, dir / "state", 10, [](int n) { return 2 + n % 7; });
  EXPECT_EQ(c.collisions, 0) << c.first_failure;
  EXPECT_TRUE(c.first_failure.empty()) << c.first_failure;
}

// Restart-then-restore, each run a new process: spawn heaps that grow, restore the service's
// snapshots, change them, save them (one in place, one under a new name, the old one deleted).
// tools/restart_cycles.sh runs 1,000 of these; CI runs fewer.
TEST(RestartRestore, RestartThenRestoreCyclesWithAStateDirectoryNeverCollide) {
  TempDir dir;
  const auto data = dir / "data";
  std::filesystem::create_directories(data);
  const int runs = kSlowBuild ? 24 : 40;
  const Cycles c = run_cycles(data, dir / "state", runs, [](int n) { return 1 + mix(n, 3) % 12; });
  EXPECT_EQ(c.runs, runs);
  EXPECT_EQ(c.collisions, 0) << c.first_failure;
  EXPECT_TRUE(c.first_failure.empty()) << c.first_failure;
}

}  // namespace
}  // namespace reheap::snaptest
