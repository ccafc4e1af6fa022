// The CRIU engine (checkpoint_engine.h), through libcriu. Built when pkg-config found criu.
//
// libcriu does its work by starting the criu binary in "swrk" mode, which ptraces the caller to
// dump it; so support() asks that binary, not only the library, whether this machine can run it.
// `criu check` explains a failure only on its standard error, which support() reads to turn the
// known failures into sentences.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>

#include <criu/criu.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include "reheap/checkpoint_engine.h"
#include "reheap/simulated_checkpoint.h"

extern char** environ;

namespace reheap {
namespace {

bool has_capabilities(std::initializer_list<int> caps) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  for (int cap : caps) {
    if ((data[cap / 32].effective & (1u << (cap % 32))) == 0) return false;
  }
  return true;
}

std::string kernel_release() {
  utsname u{};
  return ::uname(&u) == 0 ? u.release : "unknown";
}

// Runs `criu check` and returns its exit status and standard error (its diagnostics).
int run_criu_check(std::string* output) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  char arg0[] = "criu";
  char arg1[] = "check";
  char* argv[] = {arg0, arg1, nullptr};
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, "criu", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return -1;
  }
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) output->append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// The first error line of `text` that mentions `topic` (or the first error line), without its
// source location, for a sentence.
std::string first_error(const std::string& text, const std::string& topic = "") {
  std::istringstream in(text);
  std::string line, first;
  while (std::getline(in, line)) {
    if (line.find("rror") == std::string::npos) continue;
    const std::size_t colon = line.find("): ");
    if (colon != std::string::npos) line = line.substr(colon + 3);
    if (first.empty()) first = line;
    if (!topic.empty() && line.find(topic) != std::string::npos) return line;
  }
  return first.empty() ? text.substr(0, text.find('\n')) : first;
}

std::string version_text(int v) {
  // libcriu encodes 3.17.1 as 31701.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

std::string log_tail(const std::filesystem::path& log) {
  std::ifstream in(log);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.find("Error") != std::string::npos) last = line;
  }
  return last.empty() ? std::string() : " (last error: " + last + ")";
}

class CriuEngine final : public CheckpointEngine {
 public:
  std::string name() const override { return "CRIU"; }

  CheckpointSupport support() override {
    std::call_once(once_, [this] { support_ = detect(); });
    return support_;
  }

  DumpOutcome dump(const DumpRequest& request) override {
    require_available();
    // CRIU cannot dump an io_uring (libuv >= 1.45 opens one) nor an application's userfaultfd.
    for (const char* kind : {"io_uring", "userfaultfd"}) {
      if (SimulatedCheckpoint::open_descriptors(kind) > 0) {
        throw CheckpointError(std::string("CRIU cannot dump this process: it holds a ") + kind +
                              " descriptor (a libuv >= 1.45 opens io_uring rings; run it with UV_USE_IO_URING=0)");
      }
    }
    const int dir = open_directory(request.directory);
    const std::lock_guard lock(call_mutex_);
    criu_opts* opts = options(dir, "dump.log", request.keep_established_tcp);
    criu_local_set_leave_running(opts, request.leave_running);
    const int rc = criu_local_dump(opts);
    criu_local_free_opts(opts);
    ::close(dir);
    if (rc < 0) {
      throw CheckpointError("CRIU dump into " + request.directory.string() + " failed (" +
                            std::strerror(-rc) + "); see its dump.log" + log_tail(request.directory / "dump.log"));
    }
    return rc == 0 ? DumpOutcome::kDumped : DumpOutcome::kRestored;
  }

  pid_t restore(const std::filesystem::path& directory, const ProcessRestoreOptions& restore_options) {
    require_available();
    const int dir = open_directory(directory);
    const std::lock_guard lock(call_mutex_);
    criu_opts* opts = options(dir, "restore.log", restore_options.keep_established_tcp);
    const int pid = criu_local_restore_child(opts);
    criu_local_free_opts(opts);
    ::close(dir);
    if (pid < 0) {
      throw CheckpointError("CRIU restore from " + directory.string() + " failed (" + std::strerror(-pid) +
                            "; the dumped PID must be free: restore after the original exited, or in a new PID "
                            "namespace); see its restore.log" + log_tail(directory / "restore.log"));
    }
    return pid;
  }

 private:
  void require_available() {
    const CheckpointSupport s = support();
    if (!s.available) throw CheckpointError(s.reason);
  }

  // libcriu options for a dump or restore with images in `dir` (closed on failure), logging to
  // `log` there. A shell job (the process may have a terminal) with external unix sockets (a
  // connection to syslog) allowed.
  static criu_opts* options(int dir, const char* log, bool tcp_established) {
    criu_opts* opts = nullptr;
    if (criu_local_init_opts(&opts) != 0) {
      ::close(dir);
      throw CheckpointError("libcriu could not initialise its options");
    }
    criu_local_set_images_dir_fd(opts, dir);
    criu_local_set_log_file(opts, log);
    criu_local_set_log_level(opts, 4);
    criu_local_set_shell_job(opts, true);
    criu_local_set_ext_unix_sk(opts, true);
    criu_local_set_tcp_established(opts, tcp_established);
    return opts;
  }

  static int open_directory(const std::filesystem::path& directory) {
    std::error_code ec;
    std::filesystem::create_directories(directory, ec);
    const int fd = ::open(directory.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      throw CheckpointError("cannot open the checkpoint directory " + directory.string() + ": " + std::strerror(errno));
    }
    return fd;
  }

  static CheckpointSupport detect() {
    CheckpointSupport s;
    const std::string kernel = kernel_release();
    // CAP_CHECKPOINT_RESTORE is 40, CAP_SYS_PTRACE 19, CAP_NET_ADMIN 12.
    if (::geteuid() != 0 && !has_capabilities({40, 19})) {
      s.reason = "CRIU needs root, or CAP_CHECKPOINT_RESTORE and CAP_SYS_PTRACE, and this process has neither.";
      return s;
    }
    s.tcp_repair = ::geteuid() == 0 || has_capabilities({12});
    if (criu_init_opts() != 0) {
      s.reason = "libcriu could not initialise (out of memory?), so CRIU cannot be used.";
      return s;
    }
    const int version = criu_get_version();
    if (version < 0) {
      s.reason = "the criu binary that libcriu runs was not found or did not start; install Debian's criu package.";
      return s;
    }
    s.version = "CRIU " + version_text(version);
    std::string output;
    const int status = run_criu_check(&output);
    if (status != 0) {
      if (output.find("vdso") != std::string::npos || output.find("vDSO") != std::string::npos) {
        s.reason = s.version + " cannot checkpoint on this kernel (Linux " + kernel +
                   "): its vDSO check fails (\"" + first_error(output, "vDSO") +
                   "\"); CRIU 4.1 fixes this, and Debian 12's own 6.1 kernel works with " + s.version + ".";
      } else if (status < 0) {
        s.reason = "the criu binary could not be run (`criu check`), so CRIU cannot be used.";
      } else {
        s.reason = s.version + "'s self-check (`criu check`) fails on this kernel (Linux " + kernel + "): " +
                   first_error(output) + ".";
      }
      return s;
    }
    struct criu_feature_check features {};
    features.mem_track = true;
    if (criu_feature_check(&features, sizeof features) == 0) s.memory_tracking = features.mem_track;
    s.available = true;
    return s;
  }

  std::once_flag once_;
  CheckpointSupport support_;
  std::mutex call_mutex_;
};

std::shared_ptr<CriuEngine> engine_ptr() {
  static const std::shared_ptr<CriuEngine> instance = std::make_shared<CriuEngine>();
  return instance;
}

}  // namespace

std::shared_ptr<CheckpointEngine> criu_engine() { return engine_ptr(); }

pid_t restore_process(const std::filesystem::path& directory, const ProcessRestoreOptions& options) {
  return engine_ptr()->restore(directory, options);
}

}  // namespace reheap
