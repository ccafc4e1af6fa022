// SmallDisk: a tmpfs of a few MiB for the tests of a full disk, mounted without root where the
// machine allows it.
//
// A helper process holds a private mount namespace in which the tmpfs is mounted over an empty
// temporary directory: `unshare --user --map-root-user --mount sh -c 'mount -t tmpfs ... DIR &&
// echo mounted && exec cat'` (an unprivileged user may do that where user namespaces are enabled,
// as on Debian 12), or, for root on a machine without user namespaces, `unshare --mount` alone.
// Any process reaches the tmpfs through /proc/<helper>/root/DIR, a path the kernel walks in the
// helper's mount namespace, so the server under test is started as usual with that --dir. The
// helper's stdin is a pipe only the test holds: when the test ends, even killed, `cat` reads the
// end of it and exits, and the namespace and the tmpfs go with it. Nothing is mounted in the
// test's own namespace, so nothing is left mounted on the machine.
//
// When neither way works, mounted() is false and why_not() says what the machine lacks, for the
// test's skip message.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "kv_runtime_test_support.h"
#include "server_process_test_support.h"

extern char** environ;

namespace kv::testing {

class SmallDisk {
 public:
  explicit SmallDisk(std::uint64_t bytes) {
    if (mount_point_.path().empty() || logs_.path().empty()) {
      why_not_ = "no temporary directory";
      return;
    }
    std::string tried;
    for (const bool user_namespace : {true, false}) {
      if (!user_namespace && ::geteuid() != 0) break;
      if (start(bytes, user_namespace)) return;
      tried += "\n  " + attempt_ + ": " + read_text(logs_.path() / "err");
    }
    why_not_ = "a private tmpfs mount (unshare(1) with mount namespaces; user namespaces, or root)" + tried;
  }
  ~SmallDisk() { stop(); }
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;

  bool mounted() const { return helper_ > 0; }
  const std::string& why_not() const { return why_not_; }
  // The tmpfs, as every process reaches it.
  std::filesystem::path path() const {
    return "/proc/" + std::to_string(helper_) + "/root" + mount_point_.path().string();
  }

  // Writes a file `filler` (replacing the one before) until `leave` bytes of the disk are free, or
  // fewer: the disk counts in pages.
  bool fill(std::uint64_t leave) {
    unfill();
    struct statvfs disk {};
    if (::statvfs(path().c_str(), &disk) != 0) return false;
    const std::uint64_t free = std::uint64_t{disk.f_bavail} * disk.f_frsize;
    if (free <= leave) return true;
    const int fd = ::open((path() / "filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    const std::vector<char> zeros(1 << 16, 0);
    std::uint64_t left = free - leave;
    while (left > 0) {
      const ssize_t n = ::write(fd, zeros.data(), std::min<std::uint64_t>(left, zeros.size()));
      if (n <= 0) break;
      left -= static_cast<std::uint64_t>(n);
    }
    ::close(fd);
    return left == 0;
  }
  void unfill() {
    std::error_code ignored;
    std::filesystem::remove(path() / "filler", ignored);
  }

 private:
  bool start(std::uint64_t bytes, bool user_namespace) {
    std::vector<std::string> args = {"unshare"};
    if (user_namespace) {
      args.push_back("--user");
      args.push_back("--map-root-user");
    }
    args.insert(args.end(), {"--mount", "sh", "-c",
                             "mount -t tmpfs -o size=" + std::to_string(bytes) +
                                 " tmpfs \"$0\" && echo mounted && exec cat",
                             mount_point_.path().string()});
    attempt_.clear();
    for (std::size_t i = 0; i < 4 && i < args.size(); ++i) attempt_ += (i == 0 ? "" : " ") + args[i];
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return false;
    const std::filesystem::path out = logs_.path() / "out";
    const std::filesystem::path err = logs_.path() / "err";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[0], 0);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    const int spawned = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipe_fds[0]);
    if (spawned != 0) {
      ::close(pipe_fds[1]);
      attempt_ += std::string(" (cannot run it: ") + std::strerror(spawned) + ")";
      return false;
    }
    helper_ = pid;
    stdin_ = pipe_fds[1];
    // Until it says "mounted", or exits having failed.
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (std::chrono::steady_clock::now() < deadline) {
      if (read_text(out).find("mounted") != std::string::npos) return true;
      int status = 0;
      if (::waitpid(helper_, &status, WNOHANG) == helper_) {
        helper_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    stop();
    return false;
  }

  void stop() {
    if (stdin_ >= 0) ::close(stdin_);
    stdin_ = -1;
    if (helper_ > 0) {
      ::kill(helper_, SIGKILL);
      int ignored = 0;
      ::waitpid(helper_, &ignored, 0);
    }
    helper_ = -1;
  }

  TempDir mount_point_;
  TempDir logs_;
  pid_t helper_ = -1;
  int stdin_ = -1;
  std::string attempt_;
  std::string why_not_;
};

}  // namespace kv::testing
