// `reheap-snap replay BUNDLE [--program PATH] [--timeout SECONDS]`: replays a crash bundle in a
// new process.
//
// A bundle's heap holds the recording program's reactor types, and reheap-snap links none of
// them, so it cannot replay the bundle itself: it runs a program that can (program_choice.h says
// which: the one given with --program, or the one the manifest names if its build is the
// bundle's) with REHEAP_REPLAY set to the bundle. A program that supports it calls
// reheap::testing::replay_main_if_asked at the start of main, which replays the bundle, prints
// the failure (event, hook, what) and exits. To tell such a program from one that ignores the
// request and runs as usual, the program is also given REHEAP_REPLAY_REPORT, a file
// replay_main_if_asked writes to: no "replaying" line in it means the program does not support
// replay, which is reported as such. A failure recorded as a fatal signal recurs as that signal
// in the program; the report says which event was being delivered, and that counts as the
// failure recurring.
//
// Before any program runs, the bundle itself is checked (bundle_check.h): a bundle whose log
// does not reach the failing event its manifest names is refused as incomplete (kIncomplete),
// so that no program, fixed or not, can make such a bundle pass.
//
// --timeout bounds the whole command: the bundle's reading checks the clock as it goes, the
// program (its process group: whatever it started too) is killed when the time is up, and an
// alarm stops the command itself shortly after in case a read blocks (a hung file system).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "bundle_check.h"
#include "command.h"
#include "program_choice.h"

namespace reheap::snap {
namespace {

using Clock = std::chrono::steady_clock;

// The report is a few short lines; a program writing more is cut off here.
constexpr std::size_t kMaxReportBytes = 64 * 1024;
// The alarm stops the command this long after --timeout, if the orderly stop has not by then.
constexpr unsigned kAlarmGraceSeconds = 2;

// For the alarm's handler, which may only use what is async-signal-safe.
volatile sig_atomic_t g_child_group = 0;
char g_alarm_message[256];
std::size_t g_alarm_message_size = 0;
char g_report_path[64];  // the report file, removed by the alarm too ("" if none)

extern "C" void on_alarm(int) {
  if (g_child_group > 0) ::kill(-g_child_group, SIGKILL);
  if (g_report_path[0] != '\0') ::unlink(g_report_path);
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, g_alarm_message, g_alarm_message_size);
  ::_exit(kError);
}

void arm_alarm(unsigned timeout_seconds) {
  const int n = std::snprintf(g_alarm_message, sizeof g_alarm_message,
                              "reheap-snap: the replay did not end within %u s (--timeout): stopped\n",
                              timeout_seconds);
  g_alarm_message_size = n > 0 ? static_cast<std::size_t>(n) : 0;
  struct sigaction action {};
  action.sa_handler = on_alarm;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGALRM, &action, nullptr);
  ::alarm(timeout_seconds + kAlarmGraceSeconds);
}

// "signal 11 (SIGSEGV)".
std::string signal_text(int signal) {
  const char* abbreviation = sigabbrev_np(signal);
  return "signal " + std::to_string(signal) + (abbreviation != nullptr ? std::string(" (SIG") + abbreviation + ")" : "");
}

// The temporary report file, removed with it; read through the descriptor created with it, so
// that whatever the program puts under its name later is not what is read.
class ReportFile {
 public:
  ReportFile() {
    char name[] = "/tmp/reheap-snap-replay-XXXXXX";
    static_assert(sizeof name <= sizeof g_report_path);
    fd_ = ::mkostemp(name, O_CLOEXEC);
    if (fd_ < 0) return;
    path_ = name;
    std::memcpy(g_report_path, name, sizeof name);
  }
  ~ReportFile() {
    if (fd_ < 0) return;
    g_report_path[0] = '\0';
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  ReportFile(const ReportFile&) = delete;
  ReportFile& operator=(const ReportFile&) = delete;
  bool ok() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  std::string read() const {
    std::string text(kMaxReportBytes, '\0');
    std::size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::pread(fd_, text.data() + got, text.size() - got, static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    text.resize(got);
    return text;
  }

 private:
  int fd_ = -1;
  std::string path_;
};

// What the program wrote to its report.
struct Report {
  bool replaying = false;
  std::string failing_event;  // from "delivering failing event N"
  int status = -1;            // from "status S", -1 if none
};

Report parse_report(std::string_view text) {
  Report report;
  bool first = true;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    if (end == std::string_view::npos) break;  // a line cut off by the program's end
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end + 1);
    if (first) report.replaying = line == "replaying";
    first = false;
    if (line.starts_with("delivering failing event ")) {
      report.failing_event = line.substr(25);
    } else if (line.starts_with("status ")) {
      int status = -1;
      const std::string_view digits = line.substr(7);
      const auto [at, error] = std::from_chars(digits.data(), digits.data() + digits.size(), status);
      report.status = error == std::errc() && at == digits.data() + digits.size() ? status : -2;
    }
  }
  return report;
}

std::string how_it_ended(int status) {
  return WIFSIGNALED(status) ? signal_text(WTERMSIG(status)) : "exit status " + std::to_string(WEXITSTATUS(status));
}

// Runs `program` on `bundle` until it ends or `deadline`; returns its wait status, or nullopt when
// it was stopped at the deadline.
std::optional<int> run_program(const ReplayProgram& program, const std::filesystem::path& bundle,
                               const ReportFile& report, Clock::time_point deadline) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (child == 0) {
    // A group of its own, so that a stop at the deadline reaches whatever it started too.
    ::setpgid(0, 0);
    ::setenv("REHEAP_REPLAY", bundle.c_str(), 1);
    ::setenv("REHEAP_REPLAY_REPORT", report.path().c_str(), 1);
    char* argv[] = {const_cast<char*>(program.path.c_str()), nullptr};
    if (program.fd >= 0) {
      ::fexecve(program.fd, argv, environ);
    } else {
      ::execv(program.path.c_str(), argv);
    }
    std::fprintf(stderr, "reheap-snap: cannot execute %s: %s\n", program.path.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  ::setpgid(child, child);  // also here: either may run first
  g_child_group = child;
  int status = 0;
  bool stopped = false;
  for (;;) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    if (!stopped && Clock::now() >= deadline) {
      stopped = true;
      ::kill(-child, SIGKILL);  // the group of the program we started, by its id
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  g_child_group = 0;
  if (stopped) return std::nullopt;
  return status;
}

const char* kSupportAdvice =
    " Its main() must start with\n"
    "  if (auto status = reheap::testing::replay_main_if_asked(argc, argv)) return *status;\n"
    "(link reheap::testing), or give such a program with --program PATH";

}  // namespace

int run_replay(const Options& options) {
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(options.timeout_seconds);
  arm_alarm(options.timeout_seconds);
  const std::filesystem::path bundle = std::filesystem::absolute(options.files.front());
  const std::string seconds = std::to_string(options.timeout_seconds) + " s";

  CheckedBundle checked;
  try {
    checked = check_bundle(bundle, deadline);
  } catch (const RecordingError& e) {
    report_error(e.what());
    return e.code() == RecordingErrc::kIncomplete ? kIncomplete : kError;
  } catch (const SnapshotError& e) {
    report_error(describe(e));
    return kError;
  }

  std::optional<ReplayProgram> program;
  try {
    program.emplace(choose_replay_program(options.program, checked.manifest.program, checked.manifest_file,
                                          checked.log.build_id));
  } catch (const ProgramRefusal& refusal) {
    report_error(refusal.what);
    return refusal.exit_code;
  }
  std::printf("reheap-snap: running %s (%s)\n", program->path.c_str(), program->why.c_str());

  const ReportFile report;
  if (!report.ok()) {
    report_error(std::string("cannot create a temporary file in /tmp: ") + std::strerror(errno));
    return kError;
  }
  const std::optional<int> status = run_program(*program, bundle, report, deadline);
  const Report said = parse_report(report.read());
  const std::string name = program->path.string();

  if (!said.replaying) {
    report_error(name + " does not support replay: it " +
                 (status ? "exited (" + how_it_ended(*status) + ")" : "ran for " + seconds + " (stopped)") +
                 " without replaying the bundle." + kSupportAdvice);
    return kError;
  }
  if (!status) {
    report_error(name + " did not finish the replay within " + seconds + " (--timeout; stopped)");
    return kError;
  }
  if (said.status == -1 && !said.failing_event.empty() &&
      (WIFSIGNALED(*status) || (WIFEXITED(*status) && WEXITSTATUS(*status) != 0))) {
    // The event whose recording ended in a failure ended the replay: a failure recorded as a
    // fatal signal recurs as one (a sanitizer reports it and exits with a status instead).
    std::printf("event %s ended the replaying program (%s); recorded: %s: %s\n", said.failing_event.c_str(),
                how_it_ended(*status).c_str(), checked.manifest.hook.c_str(), checked.manifest.failure.c_str());
    return kNegative;
  }
  if (said.status == -1) {
    report_error(name + " stopped during the replay (" + how_it_ended(*status) + ")");
    return kError;
  }
  // The program's replay status (replay_main_if_asked): 0 no failure, 1 the failure recurred,
  // 2 diverged, 3 an error, 4 an incomplete bundle. A 0 stands: the bundle was checked above to
  // reach its failure, so "no failure" means the program did not fail there.
  switch (said.status) {
    case 0:
      return kOk;
    case 1:
      return kNegative;
    case 2:
      return kDiverged;
    case 3:
      return kError;
    case 4:
      return kIncomplete;
    default:
      report_error(name + " reported replay status " + std::to_string(said.status) +
                   ", which replay_main_if_asked does not give (0 to 4)");
      return kError;
  }
}

}  // namespace reheap::snap
