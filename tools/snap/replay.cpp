// `reheap-snap replay BUNDLE [--program PATH]`: replays a crash bundle in a new process.
//
// A bundle's heap holds the recording program's reactor types, and reheap-snap links none of
// them, so it cannot replay the bundle itself: it runs the program that recorded it (named in the
// bundle's manifest.json, or by --program, e.g. a rebuilt or fixed one) with REHEAP_REPLAY set to
// the bundle. A program that supports it calls reheap::testing::replay_main_if_asked at the start
// of main, which replays the bundle, prints the failure (event, hook, what) and exits. To tell
// such a program from one that ignores the request and runs as usual, the program is also given
// REHEAP_REPLAY_REPORT, a file replay_main_if_asked writes to: no "replaying" line in it means the
// program does not support replay, which is reported as such (and a program that runs longer than
// --timeout seconds is stopped). A failure recorded as a fatal signal recurs as that signal in
// the program; the report says which event was being delivered, and that counts as the failure
// recurring.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "command.h"

namespace reheap::snap {
namespace {

// The string value of `"key":` in a flat JSON object, or "" (the manifest's writer escapes only
// quotes, backslashes and control characters).
std::string json_field(const std::string& text, const std::string& key) {
  const std::string marker = "\"" + key + "\":";
  std::size_t at = text.find(marker);
  if (at == std::string::npos) return "";
  at = text.find('"', at + marker.size());
  if (at == std::string::npos) return "";
  std::string out;
  for (++at; at < text.size() && text[at] != '"'; ++at) {
    if (text[at] == '\\' && at + 1 < text.size()) {
      ++at;
      if (text[at] == 'u' && at + 4 < text.size()) {
        out += static_cast<char>(std::stoi(text.substr(at + 1, 4), nullptr, 16));
        at += 4;
        continue;
      }
    }
    out += text[at];
  }
  return out;
}

// "signal 11 (SIGSEGV)".
std::string signal_text(int signal) {
  const char* abbreviation = sigabbrev_np(signal);
  return "signal " + std::to_string(signal) + (abbreviation != nullptr ? std::string(" (SIG") + abbreviation + ")" : "");
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

int run_replay(const Options& options) {
  const std::filesystem::path bundle = std::filesystem::absolute(options.files.front());
  const std::filesystem::path manifest_file = bundle / "manifest.json";
  if (!std::filesystem::exists(manifest_file)) {
    report_error(bundle.string() + ": not a crash bundle (no manifest.json)");
    return kError;
  }
  const std::string manifest = read_text(manifest_file);
  if (json_field(manifest, "format") != "reheap-crash-bundle") {
    report_error(manifest_file.string() + ": not a crash bundle manifest");
    return kError;
  }
  std::filesystem::path program = options.program;
  if (program.empty()) program = json_field(manifest, "program");
  if (program.empty()) {
    report_error(manifest_file.string() + " does not name the recording program; give it with --program PATH");
    return kUsage;
  }
  if (::access(program.c_str(), X_OK) != 0) {
    report_error("cannot run " + program.string() + " (" + std::strerror(errno) +
                 "); give the program that recorded the bundle, or a rebuild of it, with --program PATH");
    return kError;
  }
  char report_name[] = "/tmp/reheap-snap-replay-XXXXXX";
  const int report_fd = ::mkstemp(report_name);
  if (report_fd < 0) {
    report_error(std::string("cannot create a temporary file: ") + std::strerror(errno));
    return kError;
  }
  ::close(report_fd);
  const std::filesystem::path report = report_name;

  std::fflush(stdout);
  const pid_t child = ::fork();
  if (child < 0) {
    report_error(std::string("fork: ") + std::strerror(errno));
    std::filesystem::remove(report);
    return kError;
  }
  if (child == 0) {
    ::setenv("REHEAP_REPLAY", bundle.c_str(), 1);
    ::setenv("REHEAP_REPLAY_REPORT", report.c_str(), 1);
    char* argv[] = {const_cast<char*>(program.c_str()), nullptr};
    ::execv(program.c_str(), argv);
    std::fprintf(stderr, "reheap-snap: cannot execute %s: %s\n", program.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options.timeout_seconds);
  bool timed_out = false;
  for (;;) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR) {
      report_error(std::string("waitpid: ") + std::strerror(errno));
      std::filesystem::remove(report);
      return kError;
    }
    if (!timed_out && std::chrono::steady_clock::now() >= deadline) {
      timed_out = true;
      ::kill(child, SIGKILL);  // the child we started, by its id
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::string said = read_text(report);
  std::filesystem::remove(report);
  if (said.rfind("replaying\n", 0) != 0) {
    report_error(program.string() + " does not support replay: it " +
                 (timed_out ? "ran for " + std::to_string(options.timeout_seconds) + " s (stopped)"
                            : "exited") +
                 " without replaying the bundle. Its main() must start with\n"
                 "  if (auto status = reheap::testing::replay_main_if_asked(argc, argv)) return *status;\n"
                 "(link reheap::testing), or give such a program with --program PATH");
    return kError;
  }
  const std::size_t at = said.find("status ");
  const std::size_t failing_at = said.find("delivering failing event ");
  if (!timed_out && at == std::string::npos && failing_at != std::string::npos &&
      (WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0))) {
    // The event whose recording ended in a failure ended the replay: a failure recorded as a
    // fatal signal recurs as one (a sanitizer reports it and exits with a status instead).
    const std::string event = said.substr(failing_at + 25, said.find('\n', failing_at) - failing_at - 25);
    const std::string how = WIFSIGNALED(status) ? signal_text(WTERMSIG(status))
                                                : "exit status " + std::to_string(WEXITSTATUS(status));
    std::printf("event %s ended the replaying program (%s); recorded: %s: %s\n", event.c_str(), how.c_str(),
                json_field(manifest, "hook").c_str(), json_field(manifest, "failure").c_str());
    return kNegative;
  }
  if (timed_out || at == std::string::npos) {
    report_error(program.string() + (timed_out ? " did not finish the replay within " +
                                                     std::to_string(options.timeout_seconds) + " s (stopped)"
                                               : " stopped during the replay (" +
                                                     (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                                                          : "exit status " +
                                                                                std::to_string(WEXITSTATUS(status))) +
                                                     ")"));
    return kError;
  }
  // The program's replay status: 0 no failure, 1 the failure recurred, 2 diverged, 3 an error.
  switch (std::atoi(said.c_str() + at + 7)) {
    case 0:
      return kOk;
    case 1:
      return kNegative;
    case 2:
      return kDiverged;
    default:
      return kError;
  }
}

}  // namespace reheap::snap
