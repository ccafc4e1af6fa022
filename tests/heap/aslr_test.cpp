// Turning ASLR off by re-executing: the re-executed program runs without address randomisation,
// loads everything at the same addresses on every run, and never executes itself in a loop.
//
// Each test starts this test program again as a child (fork, then exec of /proc/self/exe) with
// REHEAP_TEST_ASLR_REPORT naming a file. The child notices the variable during static
// initialisation, which stands in for "first thing in main", does what REHEAP_TEST_ASLR_MODE
// says, appends what it saw to the file and exits before any test runs. A re-executed child runs
// the static initialisers again, so it appends one "start" line per image.
#include <fcntl.h>
#include <sys/personality.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "reheap/aslr.h"
#include "reheap/program_layout.h"

extern char** environ;

namespace reheap {
namespace {

constexpr char kReportVariable[] = "REHEAP_TEST_ASLR_REPORT";
constexpr char kModeVariable[] = "REHEAP_TEST_ASLR_MODE";
constexpr char kMarkerVariable[] = "REHEAP_ASLR_REEXEC";  // aslr.cpp's loop guard
constexpr unsigned long kQueryPersona = 0xffffffff;

// ---- The child's side ----------------------------------------------------------------------

void append(int fd, const std::string& line) {
  const std::string text = line + "\n";
  // O_APPEND and one write per line: the lines of both images stay whole and in order.
  if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    _exit(3);
  }
}

// This image's argv, as the kernel passed it: the child has no access to main's parameters.
std::vector<std::string> own_arguments() {
  std::vector<std::string> arguments;
  std::FILE* f = std::fopen("/proc/self/cmdline", "rb");
  if (f == nullptr) {
    return arguments;
  }
  std::string current;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) {
    if (c == '\0') {
      arguments.push_back(current);
      current.clear();
    } else {
      current.push_back(static_cast<char>(c));
    }
  }
  std::fclose(f);
  return arguments;
}

[[noreturn]] void run_as_child(const char* report_path) {
  const int fd = open(report_path, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) {
    _exit(2);
  }
  append(fd, "start " + std::to_string(getpid()) + " " + (aslr_disabled() ? "off" : "on"));
  const char* mode = std::getenv(kModeVariable);
  if (mode != nullptr && std::strcmp(mode, "reexec") == 0) {
    std::vector<std::string> arguments = own_arguments();
    std::vector<char*> argv;
    for (std::string& argument : arguments) {
      argv.push_back(argument.data());
    }
    argv.push_back(nullptr);
    std::string why;
    const bool ok = reexec_without_aslr(static_cast<int>(arguments.size()), argv.data(), &why);
    append(fd, std::string("result ") + (ok ? "ok" : "failed") + " " +
                   (std::getenv(kMarkerVariable) != nullptr ? "marker-left" : "marker-gone") +
                   " " + why);
  }
  append(fd, std::string("aslr ") + (aslr_disabled() ? "off" : "on"));
  for (const LoadedObject& object : current_program_layout()) {
    std::ostringstream line;
    line << "object " << object.main_executable << " " << std::hex << object.base << " "
         << (object.build_id.empty() ? "-" : object.build_id) << " " << object.path;
    append(fd, line.str());
  }
  close(fd);
  _exit(0);  // before any test runs; also skips the leak check of a sanitized build
}

[[maybe_unused]] const bool child_hook = [] {
  if (const char* report_path = std::getenv(kReportVariable)) {
    run_as_child(report_path);
  }
  return false;
}();

// ---- The parent's side ---------------------------------------------------------------------

enum class Randomisation { kOn, kOff };

struct ChildOptions {
  Randomisation randomisation = Randomisation::kOn;  // the child's personality when it starts
  bool reexec = true;                                // whether it calls reexec_without_aslr
  bool preset_marker = false;                        // pretend it is the re-executed image
};

struct ChildReport {
  int exit_status = -1;
  std::vector<std::string> starts;  // "<pid> on|off" per image that ran
  std::string result;               // "ok|failed marker-left|marker-gone <why>"
  std::string aslr;                 // "on|off" at the end
  ProgramLayout layout;
};

std::string read_file(const std::string& path) {
  std::string text;
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) {
      text.append(buffer, n);
    }
    std::fclose(f);
  }
  return text;
}

ChildReport parse(const std::string& text) {
  ChildReport report;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    std::string rest;
    std::getline(fields >> std::ws, rest);
    if (kind == "start") {
      report.starts.push_back(rest);
    } else if (kind == "result") {
      report.result = rest;
    } else if (kind == "aslr") {
      report.aslr = rest;
    } else if (kind == "object") {
      std::istringstream object_fields(rest);
      LoadedObject object;
      object_fields >> object.main_executable >> std::hex >> object.base >> object.build_id;
      std::getline(object_fields >> std::ws, object.path);
      if (object.build_id == "-") {
        object.build_id.clear();
      }
      report.layout.push_back(object);
    }
  }
  return report;
}

ChildReport run_child(const ChildOptions& options) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string path = std::string(tmpdir != nullptr ? tmpdir : "/tmp") + "/reheap-aslr-XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd < 0) {
    ADD_FAILURE() << "mkstemp: " << std::strerror(errno);
    return {};
  }
  close(fd);

  // Everything the child needs is built before fork: between fork and exec only system calls.
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (name != kReportVariable && name != kModeVariable && name != kMarkerVariable) {
      environment.push_back(entry);
    }
  }
  environment.push_back(std::string(kReportVariable) + "=" + path);
  environment.push_back(std::string(kModeVariable) + "=" + (options.reexec ? "reexec" : "report"));
  if (options.preset_marker) {
    environment.push_back(std::string(kMarkerVariable) + "=1");
  }
  std::vector<char*> envp;
  for (std::string& entry : environment) {
    envp.push_back(entry.data());
  }
  envp.push_back(nullptr);
  // Should the child ever get past its static initialisers, this filter lets it run no test.
  std::string program = "heap_tests";
  std::string filter = "--gtest_filter=NoSuchSuite.NoSuchTest";
  char* argv[] = {program.data(), filter.data(), nullptr};

  const pid_t pid = fork();
  if (pid == 0) {
    const int persona = personality(kQueryPersona);
    const unsigned long flags = static_cast<unsigned long>(static_cast<unsigned>(persona));
    personality(options.randomisation == Randomisation::kOff ? flags | ADDR_NO_RANDOMIZE
                                                             : flags & ~ADDR_NO_RANDOMIZE);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    execve("/proc/self/exe", argv, envp.data());
    _exit(127);
  }
  ChildReport report;
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
  } else {
    int status = 0;
    waitpid(pid, &status, 0);
    report = parse(read_file(path));
    report.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  unlink(path.c_str());
  return report;
}

bool started_with_aslr(const ChildReport& report) {
  return !report.starts.empty() && report.starts.front().ends_with(" on");
}

void expect_same_layout(const ProgramLayout& a, const ProgramLayout& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].path, b[i].path);
    EXPECT_EQ(a[i].base, b[i].base) << a[i].path;
    EXPECT_EQ(a[i].build_id, b[i].build_id) << a[i].path;
    EXPECT_EQ(a[i].main_executable, b[i].main_executable) << a[i].path;
  }
}

TEST(Aslr, ReexecRestartsTheProgramOnceWithAslrOffAndNoMarkerLeft) {
  const ChildReport child = run_child({});
  ASSERT_EQ(child.exit_status, 0);
  ASSERT_FALSE(child.starts.empty());
  // A sanitizer runtime may have re-executed the child with ASLR off before main: then there is
  // nothing left to do. Otherwise the same process (same pid) runs a second image.
  if (started_with_aslr(child)) {
    ASSERT_EQ(child.starts.size(), 2u);
    EXPECT_EQ(child.starts[0].substr(0, child.starts[0].find(' ')),
              child.starts[1].substr(0, child.starts[1].find(' ')));
    EXPECT_TRUE(child.starts[1].ends_with(" off")) << child.starts[1];
  } else {
    EXPECT_EQ(child.starts.size(), 1u);
  }
  EXPECT_EQ(child.result, "ok marker-gone ");
  EXPECT_EQ(child.aslr, "off");
}

TEST(Aslr, ReexecIsANoOpWhenAslrIsAlreadyOff) {
  const ChildReport child = run_child({.randomisation = Randomisation::kOff});
  ASSERT_EQ(child.exit_status, 0);
  ASSERT_EQ(child.starts.size(), 1u);
  EXPECT_TRUE(child.starts[0].ends_with(" off")) << child.starts[0];
  EXPECT_EQ(child.result, "ok marker-gone ");
  EXPECT_EQ(child.aslr, "off");
}

TEST(Aslr, TwoReexecutedRunsLoadEveryObjectAtTheSameAddress) {
  const ChildReport first = run_child({});
  const ChildReport second = run_child({});
  ASSERT_EQ(first.exit_status, 0);
  ASSERT_EQ(second.exit_status, 0);
  ASSERT_FALSE(first.layout.empty());
  EXPECT_TRUE(first.layout.front().main_executable);
  EXPECT_EQ(first.layout.front().path, current_program_layout().front().path);
  expect_same_layout(first.layout, second.layout);
  EXPECT_EQ(layout_difference(first.layout, second.layout, LayoutCheck::kStrict), "");
}

TEST(Aslr, RunsWithAslrLoadTheProgramElsewhereAndRestoreWouldRefuse) {
  const ChildReport first = run_child({.reexec = false});
  const ChildReport second = run_child({.reexec = false});
  ASSERT_EQ(first.exit_status, 0);
  ASSERT_EQ(second.exit_status, 0);
  if (first.aslr == "off" || second.aslr == "off") {
    GTEST_SKIP() << "address randomisation is off for these children (system-wide or by the "
                    "sanitizer runtime)";
  }
  const std::string message = layout_difference(first.layout, second.layout, LayoutCheck::kStrict);
  EXPECT_NE(message.find(" when saved, at "), std::string::npos) << message;
  EXPECT_NE(message.find("reexec_without_aslr"), std::string::npos) << message;
}

TEST(Aslr, ReexecutedImageThatStillHasAslrGivesUpInsteadOfLooping) {
  const ChildReport child = run_child({.preset_marker = true});
  ASSERT_EQ(child.exit_status, 0);
  if (!started_with_aslr(child)) {
    GTEST_SKIP() << "address randomisation is off for the child (system-wide or by the "
                    "sanitizer runtime)";
  }
  EXPECT_EQ(child.starts.size(), 1u);  // it did not execute itself again
  EXPECT_TRUE(child.result.starts_with("failed marker-gone ")) << child.result;
  EXPECT_NE(child.result.find("still randomised"), std::string::npos) << child.result;
  EXPECT_EQ(child.aslr, "on");
}

}  // namespace
}  // namespace reheap
