// A recorded reactor whose event ends the process with a fatal signal (a null pointer, a stack
// overflow, abort()) still leaves a crash bundle: the helper process records a reactor and dies
// on its fifth event; the test reads what it left, in file and in ring mode.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "reheap/recording_log.h"
#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap::fatal_signal_test {
namespace {

using rttest::TempDir;

struct Order {
  std::uint32_t n;
};

// How an order of 0 kills the process: set by the helper from its arguments.
enum class Death { kNullWrite, kStackOverflow, kAbort };
Death g_death = Death::kNullWrite;

// Recurses until the stack runs out; the frame's array keeps the call from becoming a loop.
[[gnu::noinline]] std::uint32_t overflow(std::uint32_t depth) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  if (depth == 0) return frame[0];  // never: depth only grows
  return overflow(depth + 1) + static_cast<std::uint32_t>(frame[0]);
}

class OrderBook : public Reactor {
 public:
  OrderBook() { handle<&OrderBook::on_order>(); }
  void on_order(const Order& o) {
    if (o.n != 0) {
      orders_.push_back(o.n);
      return;
    }
    switch (g_death) {
      case Death::kNullWrite: {
        // Volatile both ways: the compiler knows neither the address nor may drop the store. Not
        // null: UBSan would stop a null store before it faults.
        volatile std::uintptr_t address = 16;
        *reinterpret_cast<volatile int*>(address) = 1;
        break;
      }
      case Death::kStackOverflow:
        orders_.push_back(overflow(1));
        break;
      case Death::kAbort:
        std::abort();
    }
  }

 private:
  std::vector<std::uint32_t> orders_;
};

// --helper fatal-signal <dir> <file|ring> <null|stack|abort>: records an OrderBook that takes
// orders 1, 2, 3 and dies on 0 (event 5, after on_start). Prints "reactor <ref>" first.
int record_and_die(const std::vector<std::string>& args) {
  ::alarm(60);
  g_death = args[2] == "stack" ? Death::kStackOverflow : args[2] == "abort" ? Death::kAbort : Death::kNullWrite;
  Runtime rt(RuntimeConfig{.workers = 2});
  SpawnOptions options;
  options.recording.mode = args[1] == "ring" ? RecordingMode::kRing : RecordingMode::kFile;
  options.recording.directory = args[0];
  const ActorRef book = rt.spawn<OrderBook>(options);
  std::printf("reactor %llu\n", static_cast<unsigned long long>(book.value()));
  std::fflush(stdout);
  for (std::uint32_t n : {1u, 2u, 3u, 0u}) {
    if (const SendResult sent = rt.send(book, Order{n}); sent != SendResult::kOk) {
      std::printf("send: %s\n", to_string(sent));
      return 3;
    }
  }
  rt.wait_idle();
  std::printf("still alive after the fifth event: %s\n", rt.alive(book) ? "the reactor runs" : "the reactor stopped");
  return 4;  // not reached: the fifth event ends the process
}
const rttest::RegisterHelper kRecordAndDie("fatal-signal", &record_and_die);

// --helper fatal-signal-after-pause <dir>: records two OrderBooks on one worker in file mode; the
// second takes orders 1, 2, 3, the worker then idles until its purge has run, and the first dies
// on order 0. Prints "reactor <ref>" for the one that dies, then "other <ref>".
int record_pause_and_die(const std::vector<std::string>& args) {
  ::alarm(60);
  Runtime rt(RuntimeConfig{.workers = 2});
  SpawnOptions options;
  options.worker = 0;
  options.recording.mode = RecordingMode::kFile;
  options.recording.directory = args[0];
  const ActorRef dies = rt.spawn<OrderBook>(options);
  const ActorRef other = rt.spawn<OrderBook>(options);
  std::printf("reactor %llu\nother %llu\n", static_cast<unsigned long long>(dies.value()),
              static_cast<unsigned long long>(other.value()));
  std::fflush(stdout);
  for (std::uint32_t n : {1u, 2u, 3u}) (void)rt.send(other, Order{n});
  rt.wait_idle();
  const std::uint64_t purges = rt.stats().idle_purges;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (rt.stats().idle_purges == purges && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  (void)rt.send(dies, Order{0});
  rt.wait_idle();
  return 4;  // not reached: the order ends the process
}
const rttest::RegisterHelper kRecordPauseAndDie("fatal-signal-after-pause", &record_pause_and_die);

// ---- a program with its own SIGSEGV handler, installed before the first recorded reactor ----

char* volatile g_guard = nullptr;  // a page the program maps inaccessible and repairs on a fault

// Repairs the guard page and returns: the faulting write then succeeds.
void repair_guard(int, siginfo_t* info, void*) {
  char* page = g_guard;
  if (info->si_addr >= page && info->si_addr < page + 4096) ::mprotect(page, 4096, PROT_READ | PROT_WRITE);
}

// Says it saw the fault and returns without repairing it; SA_RESETHAND sends the next one to the
// default action.
void log_and_return(int, siginfo_t*, void*) {
  static const char kSaw[] = "program handler saw the fault\n";
  [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, kSaw, sizeof kSaw - 1);
}

// Returns without repairing the fault, which so comes back, until it gives up on the fifth.
void return_five_times(int, siginfo_t*, void*) {
  static int calls = 0;
  if (++calls == 5) ::_exit(3);
}

class GuardWriter : public Reactor {
 public:
  GuardWriter() { handle<&GuardWriter::on_order>(); }
  void on_order(const Order& o) {
    if (o.n == 0) g_guard[8] = 1;  // faults: the guard page
    orders_.push_back(o.n);
  }

 private:
  std::vector<std::uint32_t> orders_;
};

// --helper fatal-signal-own-handler <dir> <repair|resethand|loop>: the program's handler comes first.
int record_with_own_handler(const std::vector<std::string>& args) {
  ::alarm(60);  // a handler chain that loops (a bug) ends here, not in the test's timeout
  g_guard = static_cast<char*>(::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  struct sigaction own {};
  own.sa_sigaction = args[1] == "repair" ? &repair_guard : args[1] == "loop" ? &return_five_times : &log_and_return;
  own.sa_flags = SA_SIGINFO | (args[1] == "resethand" ? SA_RESETHAND : 0);
  sigemptyset(&own.sa_mask);
  ::sigaction(SIGSEGV, &own, nullptr);
  Runtime rt(RuntimeConfig{.workers = 2});
  SpawnOptions options;
  options.recording.mode = RecordingMode::kFile;
  options.recording.directory = args[0];
  const ActorRef writer = rt.spawn<GuardWriter>(options);
  std::printf("reactor %llu\n", static_cast<unsigned long long>(writer.value()));
  std::fflush(stdout);
  for (std::uint32_t n : {1u, 2u, 3u, 0u, 4u}) rt.send(writer, Order{n});
  rt.wait_idle();
  std::printf("survived: %s\n", rt.alive(writer) ? "the reactor runs" : "the reactor stopped");
  return 0;
}
const rttest::RegisterHelper kRecordWithOwnHandler("fatal-signal-own-handler", &record_with_own_handler);

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Died {
  rttest::ChildResult child;
  std::filesystem::path bundle;
};

// `how` empty: the own-handler helper, with `mode` repair or resethand.
Died record_death(const TempDir& dir, const char* mode, const char* how) {
  Died d;
  d.child = *how == '\0' ? rttest::run_helper("fatal-signal-own-handler", {dir.path().string(), mode})
                          : rttest::run_helper("fatal-signal", {dir.path().string(), mode, how});
  const std::size_t at = d.child.output.find("reactor ");
  if (at == std::string::npos) return d;
  const std::string ref = d.child.output.substr(at + 8, d.child.output.find('\n', at) - at - 8);
  d.bundle = dir.path() / ("reactor-" + ref) / "crash-5";
  return d;
}

// `killed`: the process ended by the signal (not by a program handler's exit).
void expect_bundle(const Died& d, const char* signal_name, const char* reactor_type = "OrderBook",
                   bool killed = true) {
  // Sanitizers report the signal themselves and exit with a status: either way it did not exit 0.
  EXPECT_FALSE(d.child.succeeded()) << d.child.describe();
  if (killed && !rttest::kSanitized) {
    ASSERT_TRUE(WIFSIGNALED(d.child.wait_status)) << d.child.describe();
  }
  EXPECT_NE(d.child.output.find("crash bundle: " + d.bundle.string()), std::string::npos) << d.child.describe();
  ASSERT_TRUE(std::filesystem::exists(d.bundle / "manifest.json")) << d.child.describe();
  EXPECT_TRUE(std::filesystem::exists(d.bundle / "base-0.snap"));

  LogReader reader(d.bundle);
  std::vector<LogRecord> log;
  std::vector<std::uint64_t> positions;
  LogRecord r;
  while (reader.next(r)) {
    log.push_back(r);
    positions.push_back(reader.position());
  }
  ASSERT_GE(log.size(), 2u);
  EXPECT_EQ(log.back().kind, RecordKind::kEventFailed);
  EXPECT_EQ(log.back().text, "on_message");
  EXPECT_EQ(log.back().detail.rfind(std::string("fatal signal ") + signal_name, 0), 0u) << log.back().detail;
  EXPECT_EQ(positions.back(), 5u);
  EXPECT_EQ(log[log.size() - 2].kind, RecordKind::kMessage);

  const std::string manifest = read_text(d.bundle / "manifest.json");
  EXPECT_NE(manifest.find("\"hook\": \"on_message\""), std::string::npos) << manifest;
  EXPECT_NE(manifest.find(std::string("\"failure\": \"fatal signal ") + signal_name), std::string::npos) << manifest;
  EXPECT_NE(manifest.find("\"failing_event\": 5,"), std::string::npos) << manifest;
  EXPECT_NE(manifest.find("\"anchor\": \"base-0.snap\""), std::string::npos) << manifest;
  EXPECT_NE(manifest.find(reactor_type), std::string::npos) << manifest;
}

TEST(FatalSignalBundle, ANullPointerWriteLeavesABundleEndingWithTheSignal) {
  for (const char* mode : {"file", "ring"}) {
    SCOPED_TRACE(mode);
    TempDir dir;
    const Died d = record_death(dir, mode, "null");
    expect_bundle(d, "SIGSEGV");
    const std::string manifest = read_text(d.bundle / "manifest.json");
    EXPECT_NE(manifest.find("at address 0x10\""), std::string::npos) << manifest;
  }
}

// The other recorded reactors of a process that dies keep what they recorded before their worker
// last paused: it wrote their pending blocks (Worker::on_purge).
TEST(FatalSignalBundle, AnotherReactorsRecordingKeepsWhatCameBeforeItsWorkersPause) {
  TempDir dir;
  const rttest::ChildResult child = rttest::run_helper("fatal-signal-after-pause", {dir.path().string()});
  EXPECT_FALSE(child.succeeded()) << child.describe();
  const std::size_t at = child.output.find("other ");
  ASSERT_NE(at, std::string::npos) << child.describe();
  const std::string ref = child.output.substr(at + 6, child.output.find('\n', at) - at - 6);
  LogReader reader(dir.path() / ("reactor-" + ref));
  LogRecord r;
  std::size_t orders = 0;
  while (reader.next(r)) orders += r.kind == RecordKind::kMessage ? 1 : 0;
  EXPECT_EQ(orders, 3u) << child.describe();
}

TEST(FatalSignalBundle, AnAbortLeavesABundle) {
  TempDir dir;
  expect_bundle(record_death(dir, "file", "abort"), "SIGABRT");
}

// Not in sanitizer builds: ASan and TSan report a stack overflow themselves, on their own
// alternate stack.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
TEST(FatalSignalBundle, AStackOverflowLeavesABundleWrittenOnTheAlternateStack) {
  TempDir dir;
  expect_bundle(record_death(dir, "file", "stack"), "SIGSEGV");
}
#endif  // !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)

std::vector<std::filesystem::path> bundles_in(const std::filesystem::path& reactor_dir) {
  std::vector<std::filesystem::path> out;
  std::error_code none;
  for (const auto& e : std::filesystem::directory_iterator(reactor_dir, none)) {
    if (e.path().filename().string().rfind("crash-", 0) == 0) out.push_back(e.path());
  }
  return out;
}

TEST(FatalSignalBundle, AFaultTheProgramsOwnHandlerRepairsIsNoCrash) {
  TempDir dir;
  const Died d = record_death(dir, "repair", "");
  ASSERT_TRUE(d.child.succeeded()) << d.child.describe();
  EXPECT_NE(d.child.output.find("survived: the reactor runs"), std::string::npos) << d.child.describe();
  EXPECT_EQ(d.child.output.find("crash bundle"), std::string::npos) << d.child.describe();
  const std::filesystem::path reactor_dir = d.bundle.parent_path();
  EXPECT_TRUE(bundles_in(reactor_dir).empty());
  // The log reads whole: every order, no failure.
  LogReader reader(reactor_dir);
  LogRecord r;
  std::size_t messages = 0;
  while (reader.next(r)) {
    EXPECT_NE(r.kind, RecordKind::kEventFailed) << r.detail;
    if (r.kind == RecordKind::kMessage) ++messages;
  }
  EXPECT_EQ(messages, 5u);
}

TEST(FatalSignalBundle, AProgramHandlerWithResetHandLeavesOneBundleAndTheRecordingWhole) {
  TempDir dir;
  const Died d = record_death(dir, "resethand", "");
  EXPECT_FALSE(d.child.succeeded()) << d.child.describe();
  EXPECT_NE(d.child.output.find("program handler saw the fault"), std::string::npos) << d.child.describe();
  const std::vector<std::filesystem::path> bundles = bundles_in(d.bundle.parent_path());
  ASSERT_EQ(bundles.size(), 1u) << d.child.describe();
  EXPECT_EQ(bundles[0], d.bundle);
  EXPECT_GT(std::filesystem::file_size(d.bundle / "base-0.snap"), 0u);
  EXPECT_GT(std::filesystem::file_size(d.bundle.parent_path() / "base-0.snap"), 0u);
  expect_bundle(d, "SIGSEGV", "GuardWriter");
}

TEST(FatalSignalBundle, AFaultAProgramHandlerKeepsLettingBackLeavesOneBundle) {
  TempDir dir;
  const Died d = record_death(dir, "loop", "");
  ASSERT_TRUE(WIFEXITED(d.child.wait_status) && WEXITSTATUS(d.child.wait_status) == 3) << d.child.describe();
  const std::vector<std::filesystem::path> bundles = bundles_in(d.bundle.parent_path());
  ASSERT_EQ(bundles.size(), 1u) << d.child.describe();
  EXPECT_EQ(bundles[0], d.bundle);
  expect_bundle(d, "SIGSEGV", "GuardWriter", false);
}

}  // namespace
}  // namespace reheap::fatal_signal_test
