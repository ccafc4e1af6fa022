// A crash bundle replayed in another process: `reheap-snap replay` runs the program that recorded
// it (tests/testing/program/replay_program.cpp) in replay mode, and says so clearly when the
// program given cannot replay.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "replay_support.h"

namespace replay_test {
namespace {

struct Ran {
  int status = -1;  // the exit status, or -1
  std::string out;  // stdout and stderr
};

Ran run(const std::string& command) {
  Ran ran;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return ran;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) ran.out.append(buffer, n);
  const int status = ::pclose(pipe);
  if (WIFEXITED(status)) ran.status = WEXITSTATUS(status);
  return ran;
}

#if defined(REHEAP_SNAP_PATH) && defined(REHEAP_REPLAY_PROGRAM)

// The bundle the recording program wrote under `dir`: the line of its output that names it (the
// runtime's line on the failure, on stderr, may come first).
std::string bundle_of(const Ran& recorded, const std::filesystem::path& dir) {
  const std::size_t at = recorded.out.find(dir.string());
  if (at == std::string::npos) return "";
  return recorded.out.substr(at, recorded.out.find('\n', at) - at);
}

TEST(ReplayInAnotherProcess, ReheapSnapReplayRunsTheRecordingProgramAndShowsTheFailure) {
  TempDir dir;
  const Ran recorded = run(std::string(REHEAP_REPLAY_PROGRAM) + " " + dir.path().string());
  ASSERT_EQ(recorded.status, 0) << recorded.out;
  std::string bundle = bundle_of(recorded, dir.path());
  ASSERT_TRUE(std::filesystem::exists(std::filesystem::path(bundle) / "manifest.json")) << recorded.out;

  // The manifest names the program: no --program needed. The recorded failure recurs: status 1.
  const Ran replayed = run(std::string(REHEAP_SNAP_PATH) + " replay " + bundle);
  EXPECT_EQ(replayed.status, 1) << replayed.out;
  EXPECT_NE(replayed.out.find("events 1 to 5"), std::string::npos) << replayed.out;
  EXPECT_NE(replayed.out.find("event 5 failed in on_message: order 0 is not allowed"), std::string::npos)
      << replayed.out;
  // A new process is laid out anew (ASLR): the heap is relocated, so digests are not compared.
  const std::size_t warning = replayed.out.find("warning: state digests are not compared");
  ASSERT_NE(warning, std::string::npos) << replayed.out;
  // The layout's differences fit the warning's one line, the executable named as such, without
  // a restore's advice (LayoutCheck does not apply: a replay relocates anyway).
  const std::string line = replayed.out.substr(warning, replayed.out.find('\n', warning) - warning);
  EXPECT_NE(line.find("(the main executable replay_program: "), std::string::npos) << line;
  EXPECT_TRUE(line.ends_with("or `setarch -R`)")) << line;
  EXPECT_EQ(replayed.out.find("LayoutCheck"), std::string::npos) << replayed.out;
}

TEST(ReplayInAnotherProcess, AProgramThatDoesNotCallReplayMainIfAskedIsNamedAsSuch) {
  TempDir dir;
  const Ran recorded = run(std::string(REHEAP_REPLAY_PROGRAM) + " " + dir.path().string());
  ASSERT_EQ(recorded.status, 0) << recorded.out;
  const std::string bundle = bundle_of(recorded, dir.path());
  const Ran replayed = run(std::string(REHEAP_SNAP_PATH) + " replay " + bundle + " --program /bin/true");
  EXPECT_EQ(replayed.status, 3) << replayed.out;
  EXPECT_NE(replayed.out.find("/bin/true does not support replay: it exited without replaying the bundle"),
            std::string::npos)
      << replayed.out;
  EXPECT_NE(replayed.out.find("replay_main_if_asked(argc, argv)"), std::string::npos) << replayed.out;

  const Ran not_a_bundle = run(std::string(REHEAP_SNAP_PATH) + " replay " + dir.path().string());
  EXPECT_EQ(not_a_bundle.status, 3) << not_a_bundle.out;
  EXPECT_NE(not_a_bundle.out.find("not a crash bundle (no manifest.json)"), std::string::npos) << not_a_bundle.out;
}

TEST(ReplayInAnotherProcess, JsonIsAUsageErrorForReplay) {
  TempDir dir;
  const Ran replayed = run(std::string(REHEAP_SNAP_PATH) + " replay " + dir.path().string() + " --json");
  EXPECT_EQ(replayed.status, 2) << replayed.out;
  EXPECT_NE(replayed.out.find("--json does not apply to replay"), std::string::npos) << replayed.out;
}

TEST(ReplayInAnotherProcess, AFailureRecordedAsAFatalSignalRecursAsOne) {
  TempDir dir;
  const Ran recorded = run("REPLAY_PROGRAM_SEGV=1 " + std::string(REHEAP_REPLAY_PROGRAM) + " " + dir.path().string());
  EXPECT_NE(recorded.status, 0) << recorded.out;  // the shell's 139 (128 + SIGSEGV), or a sanitizer's status
  const std::string bundle = bundle_of(recorded, dir.path());
  ASSERT_TRUE(std::filesystem::exists(std::filesystem::path(bundle) / "manifest.json")) << recorded.out;

  const Ran replayed = run("REPLAY_PROGRAM_SEGV=1 " + std::string(REHEAP_SNAP_PATH) + " replay " + bundle);
  EXPECT_EQ(replayed.status, 1) << replayed.out;
  EXPECT_NE(replayed.out.find("events 1 to 5"), std::string::npos) << replayed.out;
  EXPECT_NE(replayed.out.find("event 5 ended the replaying program ("), std::string::npos) << replayed.out;
  EXPECT_NE(replayed.out.find("recorded: on_message: fatal signal SIGSEGV (segmentation fault"), std::string::npos)
      << replayed.out;
}

#endif

}  // namespace
}  // namespace replay_test
