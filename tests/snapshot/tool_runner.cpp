// Running reheap-snap as a child process (see tool_runner.h).
#include "tool_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>

extern char** environ;

namespace reheap::snaptest {

bool tool_built() {
#ifdef REHEAP_SNAP_PATH
  return true;
#else
  return false;
#endif
}

namespace {

ToolResult run(const std::vector<std::string>& args, std::chrono::milliseconds timeout,
               const std::filesystem::path& directory) {
#ifdef REHEAP_SNAP_PATH
  const std::string tool = REHEAP_SNAP_PATH;
#else
  const std::string tool = "reheap-snap";  // not reached: the tests skip without the tool
#endif
  using Clock = std::chrono::steady_clock;
  std::vector<std::string> storage = {tool};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : storage) argv.push_back(arg.data());
  argv.push_back(nullptr);

  int out_pipe[2];
  int err_pipe[2];
  EXPECT_EQ(::pipe2(out_pipe, O_CLOEXEC), 0);
  EXPECT_EQ(::pipe2(err_pipe, O_CLOEXEC), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  if (!directory.empty()) posix_spawn_file_actions_addchdir_np(&actions, directory.c_str());
  pid_t pid = 0;
  const Clock::time_point start = Clock::now();
  const int spawned = posix_spawn(&pid, tool.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ToolResult result;
  if (spawned != 0) {
    ADD_FAILURE() << "cannot run " << tool << ": " << std::strerror(spawned);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return result;
  }
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_pipes = 2;
  while (open_pipes > 0) {
    int wait_ms = -1;
    if (timeout.count() != 0) {
      const auto left = timeout - std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
      if (left.count() <= 0) {
        // The child (or a grandchild holding the pipes) is stuck: end it, and stop reading.
        ::kill(pid, SIGKILL);
        result.timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(left.count());
    }
    if (::poll(fds, 2, wait_ms) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_pipes;
      }
    }
  }
  for (const pollfd& fd : fds) {
    if (fd.fd >= 0) ::close(fd.fd);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace

ToolResult run_tool(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  return run(args, timeout, {});
}

ToolResult run_tool_in(const std::filesystem::path& directory, const std::vector<std::string>& args) {
  return run(args, std::chrono::milliseconds{0}, directory);
}

}  // namespace reheap::snaptest
