// Test support for the runtime suite: what reactors report to (Probe, Gate, Log), waiting helpers,
// temporary directories, and child processes running this binary in a helper mode.
//
// Everything here lives in the test's memory (outside any reactor heap). Reactors hold pointers to
// these objects only in tests, and never in a reactor that is restored in another process: there
// the pointer would mean nothing (see the persistent state rule in reactor.h).
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "aslr_support.h"
#include "reheap/heap_scope.h"

extern char** environ;

namespace reheap::rttest {

// ---- build flavour -----------------------------------------------------------------------------

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// ---- waiting -----------------------------------------------------------------------------------

// A generous bound for anything a test waits for: reached only when something is broken.
inline constexpr std::chrono::seconds kPatience{20};

// Polls `done` until it holds or `timeout` passes. For conditions nobody signals (a count in the
// runtime's statistics); what reactors report goes through Probe or Gate instead.
template <class F>
bool wait_until(F&& done, std::chrono::milliseconds timeout = kPatience) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

// Reactors call done(v) from their worker; the test waits for a number of calls.
class Probe {
 public:
  void done(std::uint64_t value) {
    std::lock_guard lock(mutex_);
    value_ = value;
    ++calls_;
    cv_.notify_all();
  }
  bool wait_for(std::uint64_t calls, std::chrono::milliseconds timeout = kPatience) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return calls_ >= calls; });
  }
  std::uint64_t value() {
    std::lock_guard lock(mutex_);
    return value_;
  }
  std::uint64_t calls() {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::uint64_t value_ = 0;
  std::uint64_t calls_ = 0;
};

// Holds a reactor (and so its worker) inside a hook until the test opens it: the way to make
// messages pile up in a mailbox deterministically. A reactor calls pass(); the test waits for
// wait_entered(), does what needs a busy worker, then open(). pass() gives up after kPatience so
// that a failing test cannot hang the suite.
class Gate {
 public:
  void pass() {
    std::unique_lock lock(mutex_);
    ++entered_;
    cv_.notify_all();
    cv_.wait_for(lock, kPatience, [&] { return open_; });
  }
  bool wait_entered(std::uint64_t n = 1, std::chrono::milliseconds timeout = kPatience) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return entered_ >= n; });
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::uint64_t entered_ = 0;
  bool open_ = false;
};

// A list reactors append to and the test reads, with waiting for a length. add() copies under the
// system scope: called from a hook, the reactor's heap is current, and neither the list nor the
// copies may live there (the test frees them, perhaps after the reactor is gone).
template <class T>
class Log {
 public:
  void add(const T& value) {
    HeapScope system(nullptr);
    std::lock_guard lock(mutex_);
    items_.push_back(value);
    cv_.notify_all();
  }
  bool wait_size(std::size_t n, std::chrono::milliseconds timeout = kPatience) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return items_.size() >= n; });
  }
  std::vector<T> items() {
    std::lock_guard lock(mutex_);
    return items_;
  }
  std::size_t size() {
    std::lock_guard lock(mutex_);
    return items_.size();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<T> items_;
};

// The calling thread's kernel id.
inline pid_t thread_id() noexcept { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// True once thread `tid` of this process sleeps in a futex wait (a blocking call such as
// Runtime::move has posted its request and waits for the worker). Reads /proc/self/task/<tid>/
// syscall, whose first field is the number of the system call the thread is blocked in.
inline bool wait_blocked_in_futex(pid_t tid, std::chrono::milliseconds timeout = kPatience) {
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/syscall";
  return wait_until(
      [&] {
        std::ifstream in(path);
        long number = -1;
        return (in >> number) && number == SYS_futex;
      },
      timeout);
}

// ---- files -------------------------------------------------------------------------------------

// A fresh directory under the system's temporary directory, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "reheap-rt-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::system_error(errno, std::generic_category(), "mkdtemp");
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// ---- helper modes: this binary as the other process of a test --------------------------------

// Set by main(): whether this process runs with ASLR off, as the cross-process tests need; when it
// is not, `why` says why, and those tests fail or skip as REQUIRE_ASLR_OFF (aslr_support.h) says.
struct AslrState {
  bool off = false;
  std::string why;
};
inline AslrState& aslr_state() {
  static AslrState state;
  return state;
}

// A helper mode gets the arguments after its name and returns the process's exit status.
using HelperMain = int (*)(const std::vector<std::string>& args);

inline std::map<std::string, HelperMain>& helper_modes() {
  static std::map<std::string, HelperMain> modes;
  return modes;
}

// At namespace scope in a test file: `const RegisterHelper kMine("name", &function);`
struct RegisterHelper {
  RegisterHelper(const char* name, HelperMain main) { helper_modes()[name] = main; }
};

// `binary --helper <name> args...` runs the helper; returns -1 when argv asks for none.
inline int run_helper_mode(int argc, char** argv) {
  if (argc < 3 || std::strcmp(argv[1], "--helper") != 0) return -1;
  const auto it = helper_modes().find(argv[2]);
  if (it == helper_modes().end()) {
    std::fprintf(stderr, "no helper mode '%s'\n", argv[2]);
    return 2;
  }
  return it->second(std::vector<std::string>(argv + 3, argv + argc));
}

struct ChildResult {
  int wait_status = 0;
  std::string output;  // stdout and stderr, interleaved
  bool succeeded() const { return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0; }
  std::string describe() const {
    std::ostringstream s;
    if (WIFEXITED(wait_status)) {
      s << "helper exited with status " << WEXITSTATUS(wait_status);
    } else if (WIFSIGNALED(wait_status)) {
      s << "helper killed by signal " << WTERMSIG(wait_status);
    } else {
      s << "helper wait status " << wait_status;
    }
    s << "; its output:\n" << output;
    return s.str();
  }
};

// Runs `this-binary --helper <mode> args...` and waits for it. The child inherits the personality
// main() set (ASLR off), so it loads the program at the same addresses as this process.
// posix_spawn rather than fork: glibc's vfork-style spawn does not copy this process's page
// tables, which after the capacity test's 100,000 heaps would take seconds.
inline ChildResult run_helper(const std::string& mode, const std::vector<std::string>& args) {
  std::vector<std::string> strings{"/proc/self/exe", "--helper", mode};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), "pipe2");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::system_error(rc, std::generic_category(), "posix_spawn");
  }
  ::close(fds[1]);
  ChildResult result;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n > 0) {
      result.output.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  while (::waitpid(pid, &result.wait_status, 0) < 0 && errno == EINTR) {
  }
  return result;
}

}  // namespace reheap::rttest
