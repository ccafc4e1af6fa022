// Recording a live reactor (reheap/recording.h): the log holds exactly its events and its host's
// answers, in order, in file and ring mode; a failing hook leaves a crash bundle; a full disk
// stops the recording, not the reactor.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "reheap/recording_log.h"
#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap::recording_test {
namespace {

using namespace std::chrono_literals;
using rttest::Log;
using rttest::Probe;
using rttest::TempDir;

struct Ping {
  std::uint32_t from;
  std::uint32_t seq;
};
struct Go {
  std::uint64_t dead;  // a reference nobody holds any more
};
struct Boom {
  std::uint32_t unused;
};
struct Big {
  std::uint64_t n;
  char data[2040];
};

// What the recorded reactor saw, for comparison with its log.
struct Seen {
  std::string what;
  std::uint64_t a = 0;
  std::uint64_t b = 0;
};

class Idle : public Reactor {};

class Recorded : public Reactor {
 public:
  Recorded(Log<Seen>* log, Probe* pings, std::uint32_t expected)
      : log_(log), pings_probe_(pings), expected_(expected) {
    handle<&Recorded::on_ping>();
    handle<&Recorded::on_go>();
  }
  void on_start() override {
    timer_ = start_timer(1ms);
    const auto t = now();
    log_->add({"start", timer_, static_cast<std::uint64_t>(t.time_since_epoch().count())});
    log_->add({"random", random(), 0});
  }
  void on_timer(TimerId id) override { log_->add({"timer", id, 0}); }
  void on_ping(const Ping&) {
    if (++pings_ == expected_) pings_probe_->done(pings_);
  }
  void on_go(const Go& go) {
    SpawnOptions child;
    child.name = "child";
    const ActorRef ref = spawn<Idle>(child);
    const SendResult result = send(ActorRef(go.dead), Ping{9, 9});
    log_->add({"go", ref.value(), static_cast<std::uint64_t>(result)});
  }

 private:
  Log<Seen>* log_;
  Probe* pings_probe_;
  std::uint32_t expected_;
  std::uint32_t pings_ = 0;
  TimerId timer_ = 0;
};

class Pinger : public Reactor {
 public:
  Pinger(ActorRef to, std::uint32_t from, std::uint32_t count) : to_(to), from_(from), count_(count) {}
  void on_start() override {
    for (std::uint32_t i = 0; i < count_; ++i) send(to_, Ping{from_, i});
  }

 private:
  ActorRef to_;
  std::uint32_t from_;
  std::uint32_t count_;
};

ActorRef a_dead_reference(Runtime& rt) {
  const ActorRef dead = rt.spawn<Idle>();
  rt.stop(dead);
  EXPECT_TRUE(rt.wait_stopped(dead));
  return dead;
}

std::vector<LogRecord> read_all(const std::filesystem::path& where, LogHeader* header = nullptr,
                                std::vector<std::uint64_t>* positions = nullptr) {
  LogReader reader(where);
  if (header != nullptr) *header = reader.header();
  std::vector<LogRecord> out;
  LogRecord r;
  while (reader.next(r)) {
    out.push_back(r);
    if (positions != nullptr) positions->push_back(reader.position());
  }
  return out;
}

// Runs the Recorded scenario under `recording`; returns the directory its log is read from.
struct Scenario {
  ActorRef recorded;
  ActorRef pinger[2];
  ActorRef dead;
  std::vector<Seen> seen;
  std::filesystem::path log_directory;
};

constexpr std::uint32_t kPings = 300;

Scenario run_scenario(const RecordingOptions& recording, const std::filesystem::path& dump_to) {
  Runtime rt(RuntimeConfig{.workers = 2});
  Log<Seen> log;
  Probe pings;
  Scenario s;
  s.dead = a_dead_reference(rt);
  SpawnOptions options;
  options.name = "recorded";
  options.worker = 0;
  options.recording = recording;
  s.recorded = rt.spawn<Recorded>(options, &log, &pings, 2 * kPings);
  EXPECT_TRUE(log.wait_size(3));  // start, random, timer: before any message
  // Two senders on both workers, at once: their pings interleave in the log.
  SpawnOptions on1;
  on1.worker = 1;
  s.pinger[0] = rt.spawn<Pinger>(on1, s.recorded, 0u, kPings);
  s.pinger[1] = rt.spawn<Pinger>(s.recorded, 1u, kPings);
  EXPECT_TRUE(pings.wait_for(1));
  EXPECT_EQ(rt.send(s.recorded, Go{s.dead.value()}), SendResult::kOk);
  EXPECT_TRUE(log.wait_size(4));
  EXPECT_TRUE(rt.wait_idle());
  s.log_directory = rt.dump_recording(s.recorded, dump_to);
  s.seen = log.items();
  return s;
}

// The log must be exactly: start with its answers, the timer, the pings in each sender's order,
// then Go with a spawn and a send to a dead reactor; a file recording read after the runtime's
// shutdown ends with the reactor's stop too.
void expect_scenario_log(const Scenario& s, bool ends_with_stop) {
  ASSERT_EQ(s.seen.size(), 4u);
  ASSERT_EQ(s.seen[0].what, "start");
  ASSERT_EQ(s.seen[3].what, "go");
  LogHeader header;
  std::vector<std::uint64_t> positions;
  const std::vector<LogRecord> log = read_all(s.log_directory, &header, &positions);
  EXPECT_EQ(header.actor, s.recorded);
  EXPECT_EQ(header.events_before, 0u);
  EXPECT_EQ(header.build_id, program_build_id());
  EXPECT_NE(header.recording_id, 0u);
  EXPECT_TRUE(std::filesystem::exists(s.log_directory / "base-0.snap"));

  std::size_t i = 0;
  auto next = [&](RecordKind kind) -> const LogRecord& {
    static const LogRecord none{};
    EXPECT_LT(i, log.size());
    if (i >= log.size()) return none;
    EXPECT_EQ(log[i].kind, kind) << "record " << i << " is " << to_string(log[i].kind);
    return log[i++];
  };
  next(RecordKind::kStart);
  EXPECT_EQ(positions[0], 1u);
  const LogRecord& timer_start = next(RecordKind::kTimerStart);
  EXPECT_EQ(timer_start.id, s.seen[0].a);
  EXPECT_EQ(timer_start.value[0], 1'000'000u);
  EXPECT_EQ(timer_start.value[1], 0u);
  EXPECT_EQ(next(RecordKind::kSystemNow).value[0], s.seen[0].b);
  const LogRecord& seed = next(RecordKind::kSeed);
  EXPECT_NE(seed.value[0] | seed.value[1], 0u);
  EXPECT_EQ(next(RecordKind::kTimer).id, s.seen[0].a);
  std::uint32_t expected_seq[2] = {0, 0};
  for (std::uint32_t n = 0; n < 2 * kPings; ++n) {
    const LogRecord& m = next(RecordKind::kMessage);
    ASSERT_EQ(m.type_id, message_type_id<Ping>());
    ASSERT_EQ(m.bytes.size(), sizeof(Ping));
    Ping p{};
    std::memcpy(&p, m.bytes.data(), sizeof p);
    ASSERT_LT(p.from, 2u);
    EXPECT_EQ(m.ref, s.pinger[p.from]);
    EXPECT_EQ(p.seq, expected_seq[p.from]++);  // each sender's order
  }
  const LogRecord& go = next(RecordKind::kMessage);
  EXPECT_EQ(go.type_id, message_type_id<Go>());
  EXPECT_EQ(go.ref, ActorRef());  // sent from outside
  EXPECT_EQ(positions[i - 1], 2 + 2 * kPings + 1);
  const LogRecord& spawn = next(RecordKind::kSpawn);
  EXPECT_EQ(spawn.text, "child");
  EXPECT_EQ(spawn.ref.value(), s.seen[3].a);
  EXPECT_TRUE(spawn.detail.empty());
  const LogRecord& send = next(RecordKind::kSend);
  EXPECT_EQ(send.ref, s.dead);
  EXPECT_EQ(send.type_id, message_type_id<Ping>());
  EXPECT_EQ(send.length, sizeof(Ping));
  EXPECT_TRUE(send.has_digest);
  EXPECT_FALSE(send.has_bytes);
  EXPECT_EQ(send.result, static_cast<std::uint8_t>(SendResult::kNoSuchReactor));
  EXPECT_EQ(send.result, s.seen[3].b);
  if (ends_with_stop) next(RecordKind::kStop);
  EXPECT_EQ(i, log.size()) << "records after the last expected one";
}

TEST(Recording, AFileRecordingHoldsEveryEventAndAnswerInOrder) {
  TempDir dir;
  RecordingOptions recording;
  recording.mode = RecordingMode::kFile;
  recording.directory = dir.path();
  const Scenario s = run_scenario(recording, dir.path() / "unused");
  EXPECT_EQ(s.log_directory, dir.path() / ("reactor-" + std::to_string(s.recorded.value())));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "unused"));
  expect_scenario_log(s, true);
}

TEST(Recording, ARingRecordingDumpsTheSameLog) {
  TempDir dir;
  RecordingOptions recording;
  recording.mode = RecordingMode::kRing;
  const Scenario s = run_scenario(recording, dir.path() / "dump");
  EXPECT_EQ(s.log_directory, dir.path() / "dump");
  expect_scenario_log(s, false);
}

TEST(Recording, TheRuntimesDefaultRecordsReactorsThatInherit) {
  TempDir dir;
  RuntimeConfig config{.workers = 1};
  config.recording.mode = RecordingMode::kRing;
  Runtime rt(config);
  const ActorRef inheriting = rt.spawn<Idle>();
  SpawnOptions off;
  off.recording.mode = RecordingMode::kOff;
  const ActorRef unrecorded = rt.spawn<Idle>(off);
  ASSERT_TRUE(rt.wait_idle());
  const std::vector<LogRecord> log = read_all(rt.dump_recording(inheriting, dir.path()));
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].kind, RecordKind::kStart);
  EXPECT_THROW(rt.dump_recording(unrecorded, dir.path() / "x"), std::runtime_error);
}

TEST(Recording, ADumpIntoADirectoryHoldingAnotherRecordingsDumpIsRefused) {
  TempDir dir;
  RuntimeConfig config{.workers = 1};
  config.recording.mode = RecordingMode::kRing;
  Runtime rt(config);
  const ActorRef first = rt.spawn<Idle>();
  const ActorRef second = rt.spawn<Idle>();
  ASSERT_TRUE(rt.wait_idle());
  const std::filesystem::path dump = rt.dump_recording(first, dir.path() / "dump");
  std::vector<std::string> before;
  for (const auto& e : std::filesystem::directory_iterator(dump)) before.push_back(e.path().filename());
  try {
    rt.dump_recording(second, dump);
    ADD_FAILURE() << "dumped over another recording";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("holds the dump of another recording"), std::string::npos) << e.what();
  }
  std::vector<std::string> after;
  for (const auto& e : std::filesystem::directory_iterator(dump)) after.push_back(e.path().filename());
  EXPECT_EQ(after, before);
  EXPECT_EQ(read_all(dump).size(), 1u);  // the first reactor's log, whole
  rt.dump_recording(first, dump);          // its own recording again: allowed
  rt.dump_recording(second, dir.path() / "other");
}

TEST(Recording, AStoppedReactorsLogEndsWithItsStop) {
  TempDir dir;
  Runtime rt(RuntimeConfig{.workers = 1});
  SpawnOptions options;
  options.recording.mode = RecordingMode::kFile;
  options.recording.directory = dir.path();
  const ActorRef r = rt.spawn<Idle>(options);
  ASSERT_TRUE(rt.stop(r));
  ASSERT_TRUE(rt.wait_stopped(r));
  const std::vector<LogRecord> log = read_all(dir.path() / ("reactor-" + std::to_string(r.value())));
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].kind, RecordKind::kStart);
  EXPECT_EQ(log[1].kind, RecordKind::kStop);
}

// The flight recorder keeps the log since its newest checkpoint, within its bound.
TEST(Recording, ARingKeepsOnlyTheLogSinceItsNewestCheckpoint) {
  TempDir dir;
  Runtime rt(RuntimeConfig{.workers = 1});
  Log<Seen> log;
  Probe pings;
  SpawnOptions options;
  options.recording.mode = RecordingMode::kRing;
  options.recording.ring_bytes = 4096;
  options.recording.state_hash_every = 2;
  const ActorRef r = rt.spawn<Recorded>(options, &log, &pings, 2000u);
  ASSERT_TRUE(log.wait_size(3));
  const ActorRef pinger = rt.spawn<Pinger>(r, 0u, 2000u);
  ASSERT_TRUE(pings.wait_for(1));
  ASSERT_TRUE(rt.wait_idle());
  const std::filesystem::path out = rt.dump_recording(r, dir.path());
  LogHeader header;
  std::vector<std::uint64_t> positions;
  const std::vector<LogRecord> records = read_all(out, &header, &positions);
  EXPECT_GT(header.events_before, 0u);
  EXPECT_TRUE(std::filesystem::exists(out / ("base-" + std::to_string(header.events_before) + ".snap")));
  EXPECT_LE(std::filesystem::file_size(out / ("log-" + std::to_string(header.events_before + 1) + ".rlog")),
            4096u + 512u);
  ASSERT_FALSE(records.empty());
  // The log reaches the last event: start, timer and 2000 pings.
  EXPECT_EQ(positions.back(), 2002u);
  std::uint64_t seq = 0;
  bool first = true;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (records[i].kind == RecordKind::kStateHash) {
      EXPECT_EQ(positions[i] % 2, 0u);
      EXPECT_NE(records[i].digest, 0u);
      continue;
    }
    ASSERT_EQ(records[i].kind, RecordKind::kMessage);
    EXPECT_EQ(records[i].ref, pinger);
    Ping p{};
    std::memcpy(&p, records[i].bytes.data(), sizeof p);
    if (!first) {
      EXPECT_EQ(p.seq, seq + 1);
    }
    first = false;
    seq = p.seq;
  }
  EXPECT_EQ(seq, 1999u);
}

class Crashy : public Reactor {
 public:
  explicit Crashy(Probe* pings) : pings_(pings) {
    handle<&Crashy::on_ping>();
    handle<&Crashy::on_boom>();
  }
  void on_ping(const Ping& p) { pings_->done(p.seq); }
  void on_boom(const Boom&) { throw std::runtime_error("boom at the reactor"); }

 private:
  Probe* pings_;
};

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A reactor restarted exactly stands just before its failing event again, so its next failure
// falls on the same event as the first: each keeps a bundle of its own.
TEST(Recording, ASecondFailureAtTheSameEventKeepsTheFirstBundle) {
  TempDir dir;
  Runtime rt(RuntimeConfig{.workers = 1});
  Probe pings;
  SpawnOptions options;
  options.policy = SupervisionPolicy::kRestart;
  options.recording.mode = RecordingMode::kRing;
  options.recording.directory = dir.path();
  const ActorRef r = rt.spawn<Crashy>(options, &pings);
  for (std::uint32_t i = 0; i < 3; ++i) rt.send(r, Ping{0, i});
  rt.send(r, Boom{0});  // event 5: start, 3 pings, boom
  ASSERT_TRUE(rt.wait_idle());
  rt.send(r, Boom{0});  // event 5 again: the restart stands after event 4
  ASSERT_TRUE(rt.wait_idle());
  ASSERT_EQ(rt.stats(r).restarts, 2u);
  const std::filesystem::path reactor_dir = dir.path() / ("reactor-" + std::to_string(r.value()));
  for (const char* name : {"crash-5", "crash-5.2"}) {
    SCOPED_TRACE(name);
    const std::filesystem::path bundle = reactor_dir / name;
    ASSERT_TRUE(std::filesystem::exists(bundle / "manifest.json"));
    EXPECT_NE(read_text(bundle / "manifest.json").find("\"failing_event\": 5,"), std::string::npos);
    LogHeader header;
    const std::vector<LogRecord> log = read_all(bundle, &header);
    ASSERT_FALSE(log.empty());
    EXPECT_EQ(log.back().kind, RecordKind::kEventFailed);
    EXPECT_EQ(header.events_before, std::string(name) == "crash-5" ? 0u : 4u);
  }
}

TEST(Recording, AFailingHookLeavesACrashBundleAndSupervisionGoesOn) {
  for (const RecordingMode mode : {RecordingMode::kFile, RecordingMode::kRing}) {
    SCOPED_TRACE(mode == RecordingMode::kFile ? "file" : "ring");
    TempDir dir;
    Runtime rt(RuntimeConfig{.workers = 1});
    Probe pings;
    SpawnOptions options;
    options.policy = SupervisionPolicy::kRestart;
    options.recording.mode = mode;
    options.recording.directory = dir.path();
    const ActorRef r = rt.spawn<Crashy>(options, &pings);
    for (std::uint32_t i = 0; i < 3; ++i) rt.send(r, Ping{0, i});
    rt.send(r, Boom{0});          // event 5: start, 3 pings, boom
    rt.send(r, Ping{0, 100});     // handled by the restarted reactor
    // The restart's replay calls the hooks again, and the probe (outside the heap) hears them.
    EXPECT_TRUE(rttest::wait_until([&] { return pings.value() == 100u; }));
    ASSERT_TRUE(rt.wait_idle());
    EXPECT_TRUE(rt.alive(r));
    EXPECT_EQ(rt.stats(r).restarts, 1u);

    const std::filesystem::path reactor_dir = dir.path() / ("reactor-" + std::to_string(r.value()));
    const std::filesystem::path bundle = reactor_dir / "crash-5";
    ASSERT_TRUE(std::filesystem::is_directory(bundle));
    EXPECT_TRUE(std::filesystem::exists(bundle / "base-0.snap"));
    LogHeader header;
    std::vector<std::uint64_t> positions;
    const std::vector<LogRecord> log = read_all(bundle, &header, &positions);
    ASSERT_GE(log.size(), 2u);
    EXPECT_EQ(log.back().kind, RecordKind::kEventFailed);
    EXPECT_EQ(log.back().text, "on_message");
    EXPECT_EQ(log.back().detail, "boom at the reactor");
    EXPECT_EQ(positions.back(), 5u);
    EXPECT_EQ(log[log.size() - 2].kind, RecordKind::kMessage);
    EXPECT_EQ(log[log.size() - 2].type_id, message_type_id<Boom>());

    const std::string manifest = read_text(bundle / "manifest.json");
    EXPECT_NE(manifest.find("\"hook\": \"on_message\""), std::string::npos) << manifest;
    EXPECT_NE(manifest.find("\"failure\": \"boom at the reactor\""), std::string::npos) << manifest;
    EXPECT_NE(manifest.find("\"failing_event\": 5,"), std::string::npos) << manifest;
    EXPECT_NE(manifest.find("\"reactor_type\": \"reheap::recording_test::(anonymous namespace)::Crashy\""), std::string::npos)
        << manifest;
    EXPECT_NE(manifest.find("\"recording_id\": \"" + std::to_string(header.recording_id) + "\""),
              std::string::npos) << manifest;
    EXPECT_NE(manifest.find("\"build_id\": \"" + program_build_id() + "\""), std::string::npos) << manifest;
    EXPECT_NE(manifest.find("\"reactor\": \"" + std::to_string(r.value()) + "\""), std::string::npos) << manifest;
    EXPECT_NE(manifest.find("\"program\": \"" + std::filesystem::read_symlink("/proc/self/exe").string() + "\""),
              std::string::npos) << manifest;

    // The restarted reactor stands after event 4, exactly, and is recorded from a new anchor there
    // (no on_restored: nothing was lost).
    const std::filesystem::path after = rt.dump_recording(r, dir.path() / "after");
    LogHeader restarted;
    const std::vector<LogRecord> again = read_all(after, &restarted);
    EXPECT_EQ(restarted.recording_id, header.recording_id);
    EXPECT_EQ(restarted.events_before, 4u);
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].kind, RecordKind::kMessage);
    if (mode == RecordingMode::kFile) {
      EXPECT_EQ(after, reactor_dir / "restart-1");
    }
  }
}

// A snapshot is anchored by the heap's event count: the log on disk must already hold every
// event before it, and a restored reactor can be recorded from its restore on.
TEST(Recording, SnapshotsFindTheLogWrittenUpToThemAndRestoredReactorsAreRecorded) {
  TempDir dir;
  Runtime rt(RuntimeConfig{.workers = 1});
  Probe pings;
  SpawnOptions options;
  options.recording.mode = RecordingMode::kFile;
  options.recording.directory = dir.path() / "first";
  const ActorRef r = rt.spawn<Crashy>(options, &pings);
  for (std::uint32_t i = 0; i < 3; ++i) rt.send(r, Ping{0, i});
  ASSERT_TRUE(pings.wait_for(3));
  const std::filesystem::path snapshot = dir.path() / "r.snap";
  rt.snapshot(r, snapshot);
  std::vector<std::uint64_t> positions;
  const std::vector<LogRecord> log =
      read_all(options.recording.directory / ("reactor-" + std::to_string(r.value())), nullptr, &positions);
  ASSERT_EQ(log.size(), 4u);  // start and three pings, without a dump
  EXPECT_EQ(positions.back(), 4u);
  rt.stop(r);
  ASSERT_TRUE(rt.wait_stopped(r));

  ReactorRestoreOptions restore;
  restore.spawn.recording.mode = RecordingMode::kRing;
  ASSERT_EQ(rt.restore(snapshot, restore), r);
  rt.send(r, Ping{0, 7});
  ASSERT_TRUE(pings.wait_for(4));
  ASSERT_TRUE(rt.wait_idle());
  LogHeader header;
  const std::vector<LogRecord> restored = read_all(rt.dump_recording(r, dir.path() / "second"), &header);
  EXPECT_EQ(header.events_before, 4u);
  ASSERT_EQ(restored.size(), 2u);
  EXPECT_EQ(restored[0].kind, RecordKind::kRestored);
  EXPECT_EQ(restored[1].kind, RecordKind::kMessage);
}

class Sink : public Reactor {
 public:
  explicit Sink(Probe* probe) : probe_(probe) { handle<&Sink::on_big>(); }
  void on_big(const Big& b) { probe_->done(b.n); }

 private:
  Probe* probe_;
};

// A file size limit stands in for a full disk: the write fails with EFBIG.
// A recording that cannot start refuses the reactor at spawn or restore, naming the problem,
// instead of letting it run unrecorded.
TEST(Recording, ARecordingThatCannotStartRefusesTheSpawnAndTheRestore) {
  TempDir dir;
  Runtime rt(RuntimeConfig{.workers = 1});
  const auto refused = [&](const std::filesystem::path& directory, const std::string& says) {
    SpawnOptions options;
    options.recording.mode = RecordingMode::kFile;
    options.recording.directory = directory;
    try {
      rt.spawn<Idle>(options);
      ADD_FAILURE() << "spawned with a recording into '" << directory.string() << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused({}, "reheap::Runtime::spawn: a kFile recording needs RecordingOptions::directory");
  { std::ofstream(dir.path() / "plain") << "x"; }
  refused(dir.path() / "plain", "cannot create its directory " + (dir.path() / "plain").string());
  refused(dir.path() / "plain" / "below", "cannot create its directory");
  std::filesystem::create_directory(dir.path() / "locked");
  std::filesystem::permissions(dir.path() / "locked", std::filesystem::perms::owner_read |
                                                          std::filesystem::perms::owner_exec);
  if (::access((dir.path() / "locked").c_str(), W_OK) != 0) {  // root writes anyway
    refused(dir.path() / "locked", "cannot write in its directory");
  }
  std::filesystem::permissions(dir.path() / "locked", std::filesystem::perms::owner_all);
  EXPECT_EQ(rt.stats().reactors, 0u);

  const ActorRef idle = rt.spawn<Idle>();
  rt.snapshot(idle, dir.path() / "idle.snap");
  ASSERT_TRUE(rt.stop(idle));
  ASSERT_TRUE(rt.wait_stopped(idle));
  ReactorRestoreOptions restore;
  restore.spawn.recording.mode = RecordingMode::kFile;
  EXPECT_THROW(rt.restore(dir.path() / "idle.snap", restore), std::invalid_argument);
  EXPECT_EQ(rt.stats().reactors, 0u);
  restore.spawn.recording.directory = dir.path() / "recordings";  // created when missing
  EXPECT_EQ(rt.restore(dir.path() / "idle.snap", restore), idle);
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "recordings"));
}

TEST(Recording, AFullDiskStopsTheRecordingNotTheReactor) {
  TempDir dir;
  Runtime rt(RuntimeConfig{.workers = 1});
  Probe probe;
  SpawnOptions options;
  options.recording.mode = RecordingMode::kFile;
  options.recording.directory = dir.path();
  const ActorRef r = rt.spawn<Sink>(options, &probe);
  ASSERT_TRUE(rt.wait_idle());
  const std::filesystem::path recording = rt.dump_recording(r, {});  // the start is written
  const std::uintmax_t written = std::filesystem::file_size(recording / "log-1.rlog");

  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction previous {};
  ASSERT_EQ(sigaction(SIGXFSZ, &ignore, &previous), 0);
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit tight = saved;
  tight.rlim_cur = written + 1000;  // room for part of the next block only
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &tight), 0);
  constexpr std::uint32_t kCount = 100;  // 200 KiB: more than one 64 KiB block
  for (std::uint32_t i = 1; i <= kCount; ++i) {
    Big b{};
    b.n = i;
    rt.send(r, b);
  }
  const bool all = probe.wait_for(kCount);
  const bool idle = rt.wait_idle();
  EXPECT_EQ(setrlimit(RLIMIT_FSIZE, &saved), 0);
  sigaction(SIGXFSZ, &previous, nullptr);
  ASSERT_TRUE(all);
  ASSERT_TRUE(idle);
  EXPECT_EQ(probe.value(), kCount);  // the reactor ran on
  EXPECT_EQ(rt.stats().recording_errors, 1u);
  const ReactorStats stats = rt.stats(r);
  EXPECT_EQ(stats.recording_errors, 1u);
  EXPECT_EQ(stats.messages_in, kCount);
  EXPECT_THROW(rt.dump_recording(r, {}), std::runtime_error);
  // The torn block was cut off: what was written before reads without error.
  EXPECT_EQ(std::filesystem::file_size(recording / "log-1.rlog"), written);
  std::vector<std::uint64_t> positions;
  const std::vector<LogRecord> log = read_all(recording, nullptr, &positions);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].kind, RecordKind::kStart);
}

}  // namespace
}  // namespace reheap::recording_test
