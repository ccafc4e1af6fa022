// How a recording ends when its process dies: it tells the truth. A process killed in the middle
// of a long event leaves a log whose replay ends at the event before (not a false divergence at
// the cut one); a fatal signal in one recorded reactor leaves every other reactor's log written up
// to its last whole event and every ring written out; a process killed outright loses at most the
// recording's flush interval. Each recording process is this binary, run again with one test
// selected and the directory to record into in the environment.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "reheap/recording_log.h"
#include "reheap/testing/replay.h"
#include "replay_support.h"

namespace replay_test {
namespace {

using reheap::LogReader;
using reheap::LogRecord;
using reheap::testing::Replay;

constexpr const char* kRecordInto = "REHEAP_TEST_RECORDING_END_INTO";

struct Note {
  std::uint32_t n;
};

// Keeps the notes it gets; note 0 is the one that ends the process, in the way the recording
// process was asked to (the environment's REHEAP_TEST_DEATH).
class Notebook : public Reactor {
 public:
  Notebook() { handle<&Notebook::on_note>(); }
  void on_note(const Note& note) {
    if (note.n == 0) die();
    notes_.push_back(note.n);
  }
  const std::vector<std::uint32_t>& notes() const { return notes_; }

 private:
  void die() {
    const char* how = std::getenv("REHEAP_TEST_DEATH");
    if (how != nullptr && std::string(how) == "kill-mid-event") {
      // A long event: its block is handed over when full, again and again, before the kill.
      for (std::uint32_t i = 0; i < 20'000; ++i) send(self(), Note{i + 1000});
      ::raise(SIGKILL);
    }
    // A write to an address no one maps: volatile, so that the compiler keeps it; not null,
    // which UBSan would stop first.
    volatile std::uintptr_t address = 16;
    *reinterpret_cast<volatile int*>(address) = 1;
  }
  std::vector<std::uint32_t> notes_;
};

// Note 99 keeps its event running until the process ends: the reactor is in the middle of an event
// on another worker when a fatal signal comes.
std::atomic<bool> g_sleeper_inside{false};
class Sleeper : public Reactor {
 public:
  Sleeper() { handle<&Sleeper::on_note>(); }
  void on_note(const Note& note) {
    if (note.n == 99) {
      notes_.push_back(note.n);  // a record the log must not hold whole: the event is not over
      g_sleeper_inside.store(true);
      for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    notes_.push_back(note.n);
  }
  const std::vector<std::uint32_t>& notes() const { return notes_; }

 private:
  std::vector<std::uint32_t> notes_;
};

// Sends itself a note at every event, so that its worker never idles (an idle worker writes its
// recorders' blocks, which would hide what a test here looks at).
class Busy : public Reactor {
 public:
  Busy() { handle<&Busy::on_note>(); }
  void on_start() override { send(self(), Note{1}); }
  void on_note(const Note& note) { send(self(), Note{note.n + 1}); }
};

using Environment = std::vector<std::pair<std::string, std::string>>;

// This binary's test `name`, started with `environment` added to its own; its output (both
// streams) comes through `out`. Waited for by the caller.
struct Started {
  pid_t pid = -1;
  FILE* out = nullptr;
};
Started start_recording_process(const std::string& name, const Environment& environment) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string filter = "--gtest_filter=" + name;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    for (const auto& [variable, value] : environment) ::setenv(variable.c_str(), value.c_str(), 1);
    ::execl(self.c_str(), self.c_str(), filter.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  return Started{pid, ::fdopen(fds[0], "r")};
}

struct Child {
  std::string output;
  int status = 0;  // waitpid's
};

// Runs the test `name` in a process of its own (which ends itself within a minute: alarm) and
// waits for it.
Child run_recording_process(const std::string& name, const Environment& environment) {
  Child child;
  const Started started = start_recording_process(name, environment);
  if (started.pid < 0) return child;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, started.out)) > 0;) child.output.append(buffer, n);
  std::fclose(started.out);
  ::waitpid(started.pid, &child.status, 0);
  return child;
}

// "name <ref>" lines the recording process prints.
std::map<std::string, ActorRef> refs_in(const std::string& output) {
  std::map<std::string, ActorRef> refs;
  std::size_t at = 0;
  while ((at = output.find("ref ", at)) != std::string::npos) {
    const std::size_t name_end = output.find(' ', at + 4);
    const std::size_t line_end = output.find('\n', name_end);
    refs[output.substr(at + 4, name_end - at - 4)] =
        ActorRef(std::stoull(output.substr(name_end + 1, line_end - name_end - 1)));
    at = line_end;
  }
  return refs;
}

void print_ref(const char* name, ActorRef ref) {
  std::printf("ref %s %llu\n", name, static_cast<unsigned long long>(ref.value()));
  std::fflush(stdout);
}

reheap::RecordingOptions recording_in(const char* directory, reheap::RecordingMode mode) {
  reheap::RecordingOptions r = file_recording(directory, reheap::RecordedOutputs::kDigests, 0);
  r.mode = mode;
  r.flush_interval = std::chrono::milliseconds(0);  // what is written here is the signal's doing
  return r;
}

// ---- a kill in the middle of a long event ----------------------------------------------------

TEST(RecordingEndChildProcess, KilledMidEvent) {
  const char* directory = std::getenv(kRecordInto);
  if (directory == nullptr) GTEST_SKIP() << "run by AKillInTheMiddleOfAnEventEndsTheReplayAtTheEventBefore";
  ::alarm(60);
  reheap::Runtime rt(reheap::RuntimeConfig{.workers = 1});
  reheap::SpawnOptions options;
  options.recording = recording_in(directory, reheap::RecordingMode::kFile);
  const ActorRef book = rt.spawn<Notebook>(options);
  print_ref("book", book);
  for (std::uint32_t n : {1u, 2u, 3u, 0u}) rt.send(book, Note{n});
  rt.wait_idle();
  FAIL() << "the fifth event did not end the process";
}

TEST(RecordingEnd, AKillInTheMiddleOfAnEventEndsTheReplayAtTheEventBefore) {
  TempDir dir;
  const Child child = run_recording_process("RecordingEndChildProcess.KilledMidEvent",
                                            {{kRecordInto, dir.path().string()}, {"REHEAP_TEST_DEATH", "kill-mid-event"}});
  ASSERT_TRUE(WIFSIGNALED(child.status) && WTERMSIG(child.status) == SIGKILL) << child.output;
  const ActorRef book = refs_in(child.output).at("book");
  const std::filesystem::path recording = recording_of(dir.path(), book);

  // The log holds the start of event 5 (its blocks handed over while it ran), not its end.
  LogReader reader(recording);
  LogRecord r;
  std::uint64_t last = 0;
  while (reader.next(r)) last = reader.position();
  EXPECT_EQ(last, 5u);
  EXPECT_TRUE(reader.end().event_cut);
  EXPECT_EQ(reader.end().last_whole_event, 4u);

  Replay replay = Replay::open(recording);
  EXPECT_EQ(replay.recorded_events(), 4u);
  bool said_so = false;
  for (const std::string& w : replay.warnings()) said_so = said_so || w.find("ends after event 4") != std::string::npos;
  EXPECT_TRUE(said_so) << ::testing::PrintToString(replay.warnings());
  replay.run();  // no divergence: the cut event is not replayed as if it had ended there
  EXPECT_EQ(replay.position(), 4u);
  EXPECT_EQ(replay.reactor<Notebook>().notes(), (std::vector<std::uint32_t>{1, 2, 3}));
}

// A log cut anywhere inside its last block (a kill while it was written) reads up to the block
// before, and a replay says where it ends.
TEST(RecordingEnd, ATornLastBlockEndsTheLogAtTheBlockBefore) {
  TempDir dir;
  const LedgerRun run = record_ledger(dir.path());
  std::filesystem::path log;
  for (const auto& entry : std::filesystem::directory_iterator(run.recording)) {
    if (entry.path().extension() == ".rlog") log = entry.path();
  }
  std::vector<char> bytes = read_file(log);
  ASSERT_GT(bytes.size(), 200u);
  bytes.resize(bytes.size() - 7);
  write_file(log, bytes);
  Replay replay = Replay::open(run.recording);
  ASSERT_FALSE(replay.warnings().empty());
  bool said_so = false;
  for (const std::string& w : replay.warnings()) said_so = said_so || w.find("cut short") != std::string::npos;
  EXPECT_TRUE(said_so) << ::testing::PrintToString(replay.warnings());
  EXPECT_NO_THROW(replay.run());
  EXPECT_EQ(replay.position(), replay.recorded_events());
}

// ---- a fatal signal among eight recorded reactors ------------------------------------------------

constexpr std::uint32_t kOthers = 6;  // Notebooks that do not die, besides the Sleeper

TEST(RecordingEndChildProcess, EightReactors) {
  const char* directory = std::getenv(kRecordInto);
  if (directory == nullptr) GTEST_SKIP() << "run by AFatalSignalLeavesEveryOtherRecordingWholeUpToItsLastEvent";
  ::alarm(60);
  const char* mode_name = std::getenv("REHEAP_TEST_MODE");
  const reheap::RecordingMode mode =
      mode_name != nullptr && std::string(mode_name) == "ring" ? reheap::RecordingMode::kRing : reheap::RecordingMode::kFile;
  reheap::Runtime rt(reheap::RuntimeConfig{.workers = 2});
  // The workers never idle: no purge writes the recorders' blocks before the signal does.
  for (int w = 0; w < 2; ++w) {
    reheap::SpawnOptions busy;
    busy.worker = w;
    rt.spawn<Busy>(busy);
  }
  // The others and the one that dies share worker 0; the sleeper holds worker 1 in its event.
  reheap::SpawnOptions options;
  options.recording = recording_in(directory, mode);
  options.worker = 0;
  std::vector<ActorRef> others;
  for (std::uint32_t i = 0; i < kOthers; ++i) {
    others.push_back(rt.spawn<Notebook>(options));
    print_ref(("other" + std::to_string(i)).c_str(), others.back());
  }
  options.worker = 1;
  const ActorRef sleeper = rt.spawn<Sleeper>(options);
  print_ref("sleeper", sleeper);
  options.worker = 0;
  const ActorRef dies = rt.spawn<Notebook>(options);
  print_ref("dies", dies);
  // Other i takes notes 1 .. 3 + i; the sleeper 1, 2, 3, then 99, which it never finishes.
  for (std::uint32_t i = 0; i < kOthers; ++i) {
    for (std::uint32_t n = 1; n <= 3 + i; ++n) rt.send(others[i], Note{n});
  }
  for (std::uint32_t i = 0; i < kOthers; ++i) {
    while (rt.stats(others[i]).events < 4 + i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (std::uint32_t n : {1u, 2u, 3u, 99u}) rt.send(sleeper, Note{n});
  while (!g_sleeper_inside.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  rt.send(dies, Note{0});
  for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void expect_others_replay_whole(const std::filesystem::path& dir, const std::map<std::string, ActorRef>& refs,
                                bool ring) {
  // A ring is written into ring-<its last whole event>/ of its reactor's directory.
  const auto recording_dir = [&](ActorRef ref, std::uint64_t last) {
    const std::filesystem::path base = recording_of(dir, ref);
    return ring ? base / ("ring-" + std::to_string(last)) : base;
  };
  for (std::uint32_t i = 0; i < kOthers; ++i) {
    SCOPED_TRACE("other " + std::to_string(i));
    const std::uint64_t last = 1 + 3 + i;  // on_start, then its notes
    Replay replay = Replay::open(recording_dir(refs.at("other" + std::to_string(i)), last));
    EXPECT_EQ(replay.recorded_events(), last);
    replay.run();
    std::vector<std::uint32_t> expected;
    for (std::uint32_t n = 1; n <= 3 + i; ++n) expected.push_back(n);
    EXPECT_EQ(replay.reactor<Notebook>().notes(), expected);
  }
  // The sleeper was in the middle of note 99: its log ends with note 3, the last whole event.
  Replay sleeper = Replay::open(recording_dir(refs.at("sleeper"), 4));
  EXPECT_EQ(sleeper.recorded_events(), 4u);
  sleeper.run();
  EXPECT_EQ(sleeper.reactor<Sleeper>().notes(), (std::vector<std::uint32_t>{1, 2, 3}));
}

TEST(RecordingEnd, AFatalSignalLeavesEveryOtherRecordingWholeUpToItsLastEvent) {
  TempDir dir;
  const Child child = run_recording_process("RecordingEndChildProcess.EightReactors", {{kRecordInto, dir.path().string()}});
  ASSERT_FALSE(WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0) << child.output;
  const std::map<std::string, ActorRef> refs = refs_in(child.output);
  ASSERT_EQ(refs.size(), kOthers + 2) << child.output;
  EXPECT_NE(child.output.find("crash bundle"), std::string::npos) << child.output;
  EXPECT_NE(child.output.find("the recordings of 7 other reactors were written"), std::string::npos) << child.output;
  expect_others_replay_whole(dir.path(), refs, false);
}

TEST(RecordingEnd, AFatalSignalWritesEveryRingRecordingOut) {
  TempDir dir;
  const Child child = run_recording_process("RecordingEndChildProcess.EightReactors",
                                            {{kRecordInto, dir.path().string()}, {"REHEAP_TEST_MODE", "ring"}});
  ASSERT_FALSE(WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0) << child.output;
  const std::map<std::string, ActorRef> refs = refs_in(child.output);
  ASSERT_EQ(refs.size(), kOthers + 2) << child.output;
  expect_others_replay_whole(dir.path(), refs, true);
}

// ---- a process killed outright ----------------------------------------------------------------

TEST(RecordingEndChildProcess, FlushedThenKilled) {
  const char* directory = std::getenv(kRecordInto);
  if (directory == nullptr) GTEST_SKIP() << "run by AProcessKilledOutrightLosesAtMostTheFlushInterval";
  ::alarm(60);
  reheap::Runtime rt(reheap::RuntimeConfig{.workers = 1});
  reheap::SpawnOptions busy;
  rt.spawn<Busy>(busy);  // the worker never idles: only the flush interval writes the block
  reheap::SpawnOptions options;
  options.recording = recording_in(directory, reheap::RecordingMode::kFile);
  options.recording.flush_interval = std::chrono::milliseconds(50);
  const ActorRef book = rt.spawn<Notebook>(options);
  print_ref("book", book);
  for (std::uint32_t n : {1u, 2u, 3u}) rt.send(book, Note{n});
  // The parent kills this process once the log holds the three notes.
  for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

TEST(RecordingEnd, AProcessKilledOutrightLosesAtMostTheFlushInterval) {
  TempDir dir;
  const Started child = start_recording_process("RecordingEndChildProcess.FlushedThenKilled", {{kRecordInto, dir.path().string()}});
  ASSERT_GT(child.pid, 0);
  std::string output;
  char line[256];
  while (output.find("ref book") == std::string::npos && std::fgets(line, sizeof line, child.out) != nullptr) {
    output += line;
  }
  const auto refs = refs_in(output);
  std::uint64_t whole = 0;
  std::filesystem::path recording;
  if (refs.count("book") != 0) {
    recording = recording_of(dir.path(), refs.at("book"));
    // Bounded: the block must reach the file within the interval (50 ms) plus the machine's delays.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (whole < 4 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      try {
        LogReader reader(recording);
        LogRecord r;
        while (reader.next(r)) {
        }
        whole = reader.end().last_whole_event;
      } catch (const reheap::RecordingError&) {
        // Not there yet.
      }
    }
  }
  ::kill(child.pid, SIGKILL);
  int status = 0;
  ::waitpid(child.pid, &status, 0);
  std::fclose(child.out);
  ASSERT_FALSE(recording.empty()) << output;
  ASSERT_EQ(whole, 4u) << "the recording did not reach its file while its worker stayed busy";
  Replay replay = Replay::open(recording);
  replay.run();
  EXPECT_EQ(replay.reactor<Notebook>().notes(), (std::vector<std::uint32_t>{1, 2, 3}));
}

}  // namespace
}  // namespace replay_test
