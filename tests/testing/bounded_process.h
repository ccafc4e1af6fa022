// Running a program (reheap-snap, a recording program) from a test with every cost bounded: the
// time (the whole process group is killed at the deadline, so a program it started cannot outlive
// the run either) and the memory (the group's resident memory is watched, and the group killed
// when it passes the bound). The result says which bound ended it, so that a hang or an unbounded
// read fails the test that caused it instead of the suite or the machine.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace replay_test {

struct BoundedRun {
  int exit_code = -1;  // 128 + signal when killed
  std::string out;     // stdout and stderr, interleaved
  bool timed_out = false;     // killed at the deadline
  bool over_memory = false;   // killed when the group's resident memory passed the bound
  std::uint64_t max_rss_bytes = 0;  // the largest resident set seen of one process of the group
  std::chrono::milliseconds elapsed{0};
};

struct Bounds {
  std::chrono::milliseconds time{20000};
  std::uint64_t rss_bytes = std::uint64_t{1} << 30;
};

// Runs argv[0] with `argv` and the test's environment plus `env` ("NAME=value" each).
BoundedRun run_bounded(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
                       const Bounds& bounds = {});

}  // namespace replay_test
