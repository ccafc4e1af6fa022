// Test support for the snapshot suite (support.h).
#include "support.h"

#include <fcntl.h>
#include <sys/personality.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include "reheap/zone.h"

extern char** environ;

namespace reheap::snaptest {
namespace {

bool g_aslr_disabled = false;
std::string g_aslr_why;  // NOLINT: set once by main before any test runs

}  // namespace

void set_aslr_state(bool disabled, const std::string& why) {
  g_aslr_disabled = disabled;
  g_aslr_why = why;
}
bool layout_stable() { return g_aslr_disabled; }
const std::string& aslr_reason() { return g_aslr_why; }

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") +
                        "/reheap-snaptest-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
  }
  path_ = buffer.data();
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::vector<std::string> TempDir::entries() const {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(path_)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<unsigned char> read_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + file.string());
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(in),
                                    std::istreambuf_iterator<char>());
}

void write_bytes(const std::filesystem::path& file, const std::vector<unsigned char>& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

ZoneUse zone_use() {
  const ZoneStats stats = Zone::stats();
  return ZoneUse{stats.live_heaps, stats.class_chunks_in_use, stats.large_chunks_in_use};
}

std::string to_string(const ZoneUse& use) {
  return "{live_heaps " + std::to_string(use.live_heaps) + ", class chunks " +
         std::to_string(use.class_chunks) + ", large chunks " +
         std::to_string(use.large_chunks) + "}";
}

std::string Outcome::describe() const {
  switch (kind) {
    case Kind::kReturned:
      return "returned normally (no exception)";
    case Kind::kSnapshotError:
      return std::string("SnapshotError ") + reheap::to_string(code) + ": " + what;
    case Kind::kOtherException:
      return "another exception: " + what;
  }
  return "?";
}

Outcome attempt(const std::function<void()>& f) {
  Outcome outcome;
  try {
    f();
  } catch (const SnapshotError& e) {
    outcome.kind = Outcome::Kind::kSnapshotError;
    outcome.code = e.code();
    outcome.what = e.what();
  } catch (const std::exception& e) {
    outcome.kind = Outcome::Kind::kOtherException;
    outcome.what = e.what();
  }
  return outcome;
}

Child spawn_self(const std::vector<std::string>& args, const SpawnOptions& options) {
  // Everything the child needs is prepared before fork(): between fork and exec only
  // async-signal-safe calls are allowed.
  std::vector<std::string> strings;
  strings.push_back("/proc/self/exe");
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  if (options.keep_aslr) env_strings.emplace_back("REHEAP_TEST_KEEP_ASLR=1");
  env_strings.insert(env_strings.end(), options.extra_env.begin(), options.extra_env.end());
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), "pipe2");
  }
  const int persona = ::personality(0xffffffff);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    if ((options.keep_aslr || options.randomize) && persona != -1) {
      ::personality(static_cast<unsigned long>(persona) & ~static_cast<unsigned long>(ADDR_NO_RANDOMIZE));
    }
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  return Child{pid, fds[0]};
}

bool ChildResult::succeeded() const { return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0; }

std::string ChildResult::describe() const {
  std::string how;
  if (WIFEXITED(wait_status)) {
    how = "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  } else if (WIFSIGNALED(wait_status)) {
    how = "killed by signal " + std::to_string(WTERMSIG(wait_status)) + " (" +
          ::strsignal(WTERMSIG(wait_status)) + ")";
  } else {
    how = "wait status " + std::to_string(wait_status);
  }
  return "helper " + how + "; its output:\n" + output;
}

ChildResult finish(Child& child) {
  ChildResult result;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(child.output_fd, buffer, sizeof buffer);
    if (n > 0) {
      result.output.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(child.output_fd);
  child.output_fd = -1;
  while (::waitpid(child.pid, &result.wait_status, 0) < 0 && errno == EINTR) {
  }
  child.pid = -1;
  return result;
}

ChildResult run_self(const std::vector<std::string>& args, const SpawnOptions& options) {
  Child child = spawn_self(args, options);
  return finish(child);
}

std::string hex(std::uint64_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

std::uint64_t parse_hex(const std::string& text) { return std::stoull(text, nullptr, 16); }

}  // namespace reheap::snaptest
