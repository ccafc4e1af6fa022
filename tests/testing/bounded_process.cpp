// Running a program with bounded time and memory (see bounded_process.h).
#include "bounded_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

extern char** environ;

namespace replay_test {
namespace {

using Clock = std::chrono::steady_clock;

// The resident set of `pid` in bytes (0 once it is gone).
std::uint64_t rss_of(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
  }
  return 0;
}

// `pid` and its descendants, as far as /proc lists children.
void family_of(pid_t pid, std::vector<pid_t>& out, int depth = 0) {
  out.push_back(pid);
  if (depth > 8) return;
  std::ifstream children("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  pid_t child = 0;
  while (children >> child) family_of(child, out, depth + 1);
}

}  // namespace

BoundedRun run_bounded(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                       const Bounds& bounds) {
  BoundedRun result;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe2: " << std::strerror(errno);
    return result;
  }
  std::vector<std::string> storage = argv;
  std::vector<char*> args;
  for (std::string& a : storage) args.push_back(a.data());
  args.push_back(nullptr);
  // The test's environment with `env` on top (a later NAME= wins over an earlier one in getenv
  // only by luck, so the replaced names are left out).
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('=') + 1);
    const bool replaced = std::any_of(env.begin(), env.end(), [&](const std::string& x) { return x.rfind(name, 0) == 0; });
    if (!replaced) env_storage.push_back(entry);
  }
  env_storage.insert(env_storage.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (std::string& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);

  // posix_spawn, not fork: a sanitized test process maps terabytes of shadow, and copying its
  // page tables for every run would cost more than the run.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);  // a group of its own: group id = its pid
  posix_spawnattr_setpgroup(&attributes, 0);
  const Clock::time_point start = Clock::now();
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, args[0], &actions, &attributes, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) {
    ADD_FAILURE() << "cannot run " << argv[0] << ": " << std::strerror(spawned);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return result;
  }
  ::close(pipe_fds[1]);

  int status = 0;
  bool reaped = false;
  bool pipe_open = true;
  while (pipe_open || !reaped) {
    if (!reaped) {
      struct rusage usage {};
      const pid_t done = ::wait4(pid, &status, WNOHANG, &usage);
      if (done == pid) {
        reaped = true;
        result.max_rss_bytes = std::max<std::uint64_t>(result.max_rss_bytes,
                                                       static_cast<std::uint64_t>(usage.ru_maxrss) * 1024);
        // What the program started and left behind goes with it.
        ::kill(-pid, SIGKILL);
      } else {
        std::vector<pid_t> family;
        family_of(pid, family);
        for (const pid_t member : family) {
          const std::uint64_t rss = rss_of(member);
          result.max_rss_bytes = std::max(result.max_rss_bytes, rss);
          if (rss > bounds.rss_bytes && !result.over_memory) {
            result.over_memory = true;
            ::kill(-pid, SIGKILL);
          }
        }
      }
    }
    if (Clock::now() - start > bounds.time) {
      if (!result.timed_out) {
        result.timed_out = true;
        ::kill(-pid, SIGKILL);
      }
      if (!reaped) {
        ::wait4(pid, &status, 0, nullptr);
        reaped = true;
      }
      break;  // a process outside the group may hold the pipe: stop reading it
    }
    if (!pipe_open) {
      ::poll(nullptr, 0, 2);
      continue;
    }
    pollfd fd{pipe_fds[0], POLLIN, 0};
    if (::poll(&fd, 1, 2) > 0) {
      char buffer[4096];
      const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
      if (n > 0) {
        // Kept to a bound too: a run that prints without end is the test's failure, not its memory's.
        if (result.out.size() < (std::size_t{1} << 20)) result.out.append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0) {
        pipe_open = false;
      }
    }
  }
  ::close(pipe_fds[0]);
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace replay_test
