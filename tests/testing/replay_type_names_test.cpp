// A replay's reports name a recorded message's C++ type even in a process where the recorded
// reactor was never constructed: the recording process (this binary, run again with one test
// selected) handles and sends the messages; the replaying process (this test) restores the
// reactor from the crash bundle, so its constructor, where handle<>() is called, never runs here,
// and nothing here sends or handles those types either. The names come from the types' code
// being in the binary, which is all a replay can rely on.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "reheap/testing/replay.h"
#include "replay_support.h"

extern char** environ;

// A named namespace, so that the names the reports must show are exactly these.
namespace type_names_test {

using reheap::ActorRef;
using reheap::Reactor;
using reheap::testing::Divergence;
using reheap::testing::Replay;
using reheap::testing::ReplayedFailure;

constexpr const char* kRecordInto = "REHEAP_TEST_RECORD_TYPE_NAMES_INTO";

struct Ping {
  std::uint32_t n;
};
struct Pong {
  std::uint32_t n;
};
struct Lookup {
  std::string member;
  MSGPACK_DEFINE(member)
};

// Set in the replaying process to make the replayed reactor leave pings unanswered: the report
// of the missing send then names a type this process has neither sent nor handled.
bool g_leave_unanswered = false;

// Answers each ping with a pong to its sender; looks members up with unordered_map::at, which
// throws std::out_of_range for one it does not know (the recorded failure).
class Room : public Reactor {
 public:
  Room() {
    handle<&Room::on_ping>();
    handle<&Room::on_lookup>();
  }
  void on_ping(const Ping& p) {
    if (!g_leave_unanswered) send(sender(), Pong{p.n});
  }
  void on_lookup(const Lookup& l) { seats_ += members_.at(l.member); }

 private:
  std::unordered_map<std::string, int> members_;
  int seats_ = 0;
};

// The recording process's part: runs only when a test below starts this binary to record.
TEST(ReplayTypeNamesChildProcess, Records) {
  const char* directory = std::getenv(kRecordInto);
  if (directory == nullptr) GTEST_SKIP() << "the recording process of the other ReplayTypeNames tests: runs only with " << kRecordInto << " set";
  reheap::Runtime rt(reheap::RuntimeConfig{.workers = 1});
  reheap::SpawnOptions options;
  options.name = "lobby";
  options.recording = replay_test::file_recording(directory);
  const ActorRef room = rt.spawn<Room>(options);
  rt.send(room, Ping{1});
  rt.send(room, Ping{2});
  rt.send(room, Lookup{"nobody"});
  ASSERT_TRUE(rt.wait_idle());
}

// Runs this binary's ReplayTypeNamesChildProcess.Records with the environment that makes it
// record into `dir`, waits for it (at most a minute; killed after that) and returns the crash
// bundle it left there, or "" with a failure naming what went wrong.
std::filesystem::path record_in_another_process(const std::filesystem::path& dir) {
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string filter = "--gtest_filter=ReplayTypeNamesChildProcess.Records";
  const std::string output = (dir / "recording-process.txt").string();
  const std::string setting = std::string(kRecordInto) + "=" + (dir / "recorded").string();
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
  env.push_back(const_cast<char*>(setting.c_str()));
  env.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
  char* argv[] = {const_cast<char*>(exe.c_str()), const_cast<char*>(filter.c_str()), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, exe.c_str(), &files, nullptr, argv, env.data());
  posix_spawn_file_actions_destroy(&files);
  if (spawned != 0) {
    ADD_FAILURE() << "cannot start " << exe << ": " << std::strerror(spawned);
    return {};
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ADD_FAILURE() << "the recording process did not end within a minute; its output: "
                    << std::string(replay_test::read_file(output).data(), replay_test::read_file(output).size());
      return {};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::vector<char> said = replay_test::read_file(output);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ADD_FAILURE() << "the recording process failed: " << std::string(said.data(), said.size());
    return {};
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir / "recorded")) {
    if (std::filesystem::exists(entry.path() / "crash-4" / "manifest.json")) return entry.path() / "crash-4";
  }
  ADD_FAILURE() << "no crash bundle crash-4 under " << (dir / "recorded") << "; the recording process said: "
                << std::string(said.data(), said.size());
  return {};
}

struct AnswerAsRecorded {
  ~AnswerAsRecorded() { g_leave_unanswered = false; }
};

TEST(ReplayTypeNames, ADivergenceNamesTheMessageTypesOfAReactorNeverConstructedHere) {
  replay_test::TempDir dir;
  const std::filesystem::path bundle = record_in_another_process(dir.path());
  ASSERT_FALSE(bundle.empty());
  Replay replay = Replay::open(bundle);
  const AnswerAsRecorded restore;
  g_leave_unanswered = true;
  try {
    replay.run();
    FAIL() << "the replay did not diverge";
  } catch (const Divergence& d) {
    EXPECT_EQ(d.event(), 2u);
    const std::string report = d.what();
    // The event: "on_message: a message of type 0x... (type_names_test::Ping) ...".
    EXPECT_NE(report.find(" (type_names_test::Ping)"), std::string::npos) << report;
    // The recorded send the replay missed: "send to ...: type 0x... (type_names_test::Pong), ...".
    EXPECT_EQ(d.kind(), reheap::testing::DivergenceKind::kMissingOutput);
    EXPECT_NE(d.expected().find(" (type_names_test::Pong)"), std::string::npos) << d.expected();
  }
}

TEST(ReplayTypeNames, AReplayedFailureNamesTheReactorTypeAndTheExceptionType) {
  replay_test::TempDir dir;
  const std::filesystem::path bundle = record_in_another_process(dir.path());
  ASSERT_FALSE(bundle.empty());
  Replay replay = Replay::open(bundle);
  try {
    replay.run();
    FAIL() << "the recorded failure did not recur";
  } catch (const ReplayedFailure& f) {
    EXPECT_EQ(f.event(), 4u);
    EXPECT_EQ(f.reactor_type(), "type_names_test::Room");
    EXPECT_EQ(f.exception_type(), "std::out_of_range");
    // A recording does not keep the reactor's SpawnOptions name.
    EXPECT_EQ(f.name(), "");
    EXPECT_EQ(std::string(f.what()), "reactor " + std::to_string(f.reactor().value()) +
                                         " (type_names_test::Room) failed in on_message: std::out_of_range: " +
                                         f.exception());
  }
}


}  // namespace type_names_test
