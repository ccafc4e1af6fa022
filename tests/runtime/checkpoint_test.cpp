// Whole-process checkpoints (process_checkpoint.h) with the simulated engine: the barrier holds
// every worker between events, outside sends wait in mailboxes, the userfaultfd is closed during
// the dump and a tracked reactor's next snapshot is full, timers are parked and re-armed, the TCP
// policy closes connections and keeps listeners (or keeps everything), the restored path runs
// on_restored. CRIU itself: detected once, with a sentence; really dumped and restored only where
// it works (skipped here with that sentence).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "reheap/runtime.h"
#include "reheap/simulated_checkpoint.h"
#include "reheap/write_tracking.h"
#include "runtime_support.h"
#include "write_tracking_support.h"

// A namespace of its own: the handler table keys messages by type name, and other files of this
// binary have a Tick or a Collector of their own.
namespace reheap::checkpoint_test {
namespace {

using namespace std::chrono_literals;
using rttest::Log;
using rttest::Probe;
using rttest::TempDir;

std::atomic<int> g_in_handler{0};
std::atomic<std::uint64_t> g_handled{0};
std::atomic<bool> g_spin{false};

struct Tick {
  int n = 0;
};

// Keeps its worker busy while g_spin: every message sends itself the next one.
class Spinner : public Reactor {
 public:
  Spinner() { handle<&Spinner::on_tick>(); }
  void on_tick(const Tick& t) {
    g_in_handler.fetch_add(1);
    g_handled.fetch_add(1);
    g_in_handler.fetch_sub(1);
    if (g_spin.load()) send(self(), Tick{t.n + 1});
  }
};

std::shared_ptr<SimulatedCheckpoint> simulated(SimulatedCheckpoint::Options o = {}) {
  return std::make_shared<SimulatedCheckpoint>(std::move(o));
}

TEST(ProcessCheckpoint, TheBarrierHoldsEveryWorkerBetweenEvents) {
  g_spin = true;
  Runtime rt(RuntimeConfig{.workers = 2});
  for (int w = 0; w < 2; ++w) {
    SpawnOptions o;
    o.worker = w;
    const ActorRef r = rt.spawn<Spinner>(o);
    ASSERT_EQ(rt.send(r, Tick{}), SendResult::kOk);
  }
  ASSERT_TRUE(rttest::wait_until([] { return g_handled.load() > 1000; }));
  std::uint64_t at_start = 0;
  int running = -1;
  auto engine = simulated({.pause = 50ms, .during = [&] {
                             at_start = g_handled.load();
                             running = g_in_handler.load();
                           }});
  TempDir dir;
  const CheckpointResult result = rt.checkpoint_process(dir.path(), {.engine = engine});
  EXPECT_EQ(result.outcome, DumpOutcome::kDumped);
  EXPECT_EQ(running, 0) << "a handler ran during the dump";
  const auto seen = engine->observations();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].workers, 2);
  EXPECT_GE(result.pause, 50ms);
  EXPECT_GE(result.dump, 50ms);
  // Messages flow again after the resume.
  const std::uint64_t after = g_handled.load();
  EXPECT_GE(after, at_start);
  EXPECT_TRUE(rttest::wait_until([&] { return g_handled.load() > after + 1000; }));
  g_spin = false;
  EXPECT_TRUE(rt.wait_idle());
}

TEST(ProcessCheckpoint, NothingIsHandledWhileTheDumpRuns) {
  g_spin = true;
  Runtime rt(RuntimeConfig{.workers = 2});
  const ActorRef r = rt.spawn<Spinner>();
  ASSERT_EQ(rt.send(r, Tick{}), SendResult::kOk);
  ASSERT_TRUE(rttest::wait_until([] { return g_handled.load() > 100; }));
  std::uint64_t first = 0, last = 0;
  auto engine = simulated({.during = [&] {
    first = g_handled.load();
    std::this_thread::sleep_for(40ms);
    last = g_handled.load();
  }});
  TempDir dir;
  rt.checkpoint_process(dir.path(), {.engine = engine});
  EXPECT_EQ(first, last) << "handlers ran while the process was being dumped";
  g_spin = false;
  EXPECT_TRUE(rt.wait_idle());
}

struct Note {
  int value = 0;
};

class Collector : public Reactor {
 public:
  explicit Collector(Log<int>* log) : log_(log) { handle<&Collector::on_note>(); }
  void on_note(const Note& n) { log_->add(n.value); }

 private:
  Log<int>* log_;
};

TEST(ProcessCheckpoint, SendsFromOutsideDuringTheDumpAreHandledAfterInOrder) {
  Log<int> log;
  Runtime rt(RuntimeConfig{.workers = 2});
  const ActorRef r = rt.spawn<Collector>(&log);
  ASSERT_EQ(rt.send(r, Note{0}), SendResult::kOk);
  ASSERT_TRUE(log.wait_size(1));
  std::size_t during = 0;
  auto engine = simulated({.during = [&] {
    for (int i = 1; i <= 100; ++i) EXPECT_EQ(rt.send(r, Note{i}), SendResult::kOk);
    std::this_thread::sleep_for(20ms);
    during = log.size();
  }});
  TempDir dir;
  rt.checkpoint_process(dir.path(), {.engine = engine});
  EXPECT_EQ(during, 1u) << "handled while parked";
  ASSERT_TRUE(log.wait_size(101));
  const std::vector<int> got = log.items();
  for (int i = 0; i <= 100; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)], i);
}

// A reactor whose heap is written on demand.
struct Grow {
  int bytes = 0;
};

class Writer : public Reactor {
 public:
  Writer() { handle<&Writer::on_grow>(); }
  void on_grow(const Grow& g) { data_.append(static_cast<std::size_t>(g.bytes), 'x'); }

 private:
  std::string data_;
};

TEST(ProcessCheckpoint, TheUserfaultfdIsClosedForTheDumpAndTheNextSnapshotIsFull) {
  REQUIRE_WRITE_TRACKING();
  TempDir dir;
  Runtime rt(RuntimeConfig{.workers = 2});
  const ActorRef r = rt.spawn<Writer>();
  ASSERT_EQ(rt.send(r, Grow{100000}), SendResult::kOk);
  ASSERT_TRUE(rt.wait_idle());
  rt.snapshot(r, dir.path() / "full.snap");
  ASSERT_EQ(rt.send(r, Grow{10}), SendResult::kOk);
  ASSERT_TRUE(rt.wait_idle());
  ASSERT_EQ(rt.snapshot_increment(r, dir.path() / "inc1.snap").kind, SnapshotKind::kIncremental);
  ASSERT_GE(SimulatedCheckpoint::open_descriptors("userfaultfd"), 1);

  auto engine = simulated();
  const CheckpointResult result = rt.checkpoint_process(dir.path() / "dump", {.engine = engine});
  const auto seen = engine->observations();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].userfaultfds_open, 0) << "CRIU cannot dump a userfaultfd";
  EXPECT_TRUE(seen[0].tracking_suspended);
  EXPECT_GE(result.tracked_heaps, 1u);
  EXPECT_TRUE(result.tracking_error.empty()) << result.tracking_error;
  EXPECT_FALSE(write_tracking_suspended());

  ASSERT_EQ(rt.send(r, Grow{10}), SendResult::kOk);
  ASSERT_TRUE(rt.wait_idle());
  const SnapshotInfo after = rt.snapshot_increment(r, dir.path() / "after.snap");
  EXPECT_EQ(after.kind, SnapshotKind::kFull);
  EXPECT_NE(after.fallback_reason.find("process checkpoint"), std::string::npos) << after.fallback_reason;
  ASSERT_EQ(rt.send(r, Grow{10}), SendResult::kOk);
  ASSERT_TRUE(rt.wait_idle());
  const SnapshotInfo next = rt.snapshot_increment(r, dir.path() / "next.snap");
  EXPECT_EQ(next.kind, SnapshotKind::kIncremental) << next.fallback_reason;
}

using Clock = std::chrono::steady_clock;

class Timed : public Reactor {
 public:
  Timed(Log<Clock::time_point>* ticks, Log<Clock::time_point>* shots, std::chrono::milliseconds shot)
      : ticks_(ticks), shots_(shots), shot_(shot) {}
  void on_start() override {
    tick_ = start_timer(5ms, 5ms);
    start_timer(shot_);
  }
  void on_timer(TimerId id) override { (id == tick_ ? ticks_ : shots_)->add(Clock::now()); }

 private:
  Log<Clock::time_point>* ticks_;
  Log<Clock::time_point>* shots_;
  std::chrono::milliseconds shot_;
  TimerId tick_ = 0;
};

// One try: a one-shot of `shot` armed at the start, a dump of twice that. False when the one-shot
// fired before the checkpoint's barrier (a loaded machine took longer than `shot` to get there):
// the try then proves nothing about parking and is repeated with a longer one-shot.
bool timers_across(DumpOutcome outcome, std::chrono::milliseconds shot) {
  Log<Clock::time_point> ticks, shots;
  Runtime rt(RuntimeConfig{.workers = 2});
  rt.spawn<Timed>(&ticks, &shots, shot);
  EXPECT_TRUE(ticks.wait_size(3));
  std::size_t ticks_at_dump = 0;
  std::size_t shots_at_dump = 0;
  auto engine = simulated({.outcome = outcome, .pause = 2 * shot, .during = [&] {
                             ticks_at_dump = ticks.size();
                             shots_at_dump = shots.size();
                           }});
  int restored_hooks = 0;
  TempDir dir;
  const CheckpointResult result = rt.checkpoint_process(
      dir.path(), {.engine = engine, .on_restored = [&](const CheckpointResult&) { ++restored_hooks; }});
  const Clock::time_point resumed = Clock::now();
  EXPECT_EQ(result.outcome, outcome);
  EXPECT_EQ(restored_hooks, outcome == DumpOutcome::kRestored ? 1 : 0);
  if (shots_at_dump != 0) return false;
  // The one-shot had at most `shot` left at the barrier and the dump took twice that: parked, it
  // had not fired by the resume, and fires after it.
  EXPECT_EQ(shots.size(), 0u) << "a timer fired during the dump";
  EXPECT_LE(ticks.size(), ticks_at_dump + 1);
  EXPECT_TRUE(shots.wait_size(1));
  if (shots.size() != 0) {
    EXPECT_GT(shots.items()[0], resumed);
  }
  const std::size_t now = ticks.size();
  EXPECT_TRUE(ticks.wait_size(now + 5)) << "the periodic timer runs again";
  return true;
}

void check_timers_across(DumpOutcome outcome) {
  for (const auto shot : {150ms, 600ms, 2400ms, 9600ms}) {
    if (timers_across(outcome, shot)) return;
    std::printf("[ retry    ] the %lld ms one-shot fired before the checkpoint's barrier\n",
                static_cast<long long>(shot.count()));
  }
  ADD_FAILURE() << "the one-shot fired before the checkpoint's barrier in every try";
}

TEST(ProcessCheckpoint, TimersAreParkedForTheDumpAndKeepTheirDelayAfter) { check_timers_across(DumpOutcome::kDumped); }

TEST(ProcessCheckpoint, TheRestoredPathReArmsTimersAndRunsTheHookOnce) { check_timers_across(DumpOutcome::kRestored); }

// Listens; answers every connection's bytes with "ok:" + bytes; logs its closes.
class Server : public Reactor {
 public:
  Server(Probe* port, Log<std::string>* log) : port_(port), log_(log) {}
  void on_start() override { port_->done(local_port(listen("127.0.0.1", 0))); }
  void on_accept(SocketId, SocketId) override { log_->add("accept"); }
  void on_data(SocketId id, std::span<const char> data) override {
    std::string reply = "ok:";
    reply.append(data.data(), data.size());
    write(id, reply);
  }
  void on_closed(SocketId, std::error_code ec) override { log_->add("closed:" + std::to_string(ec.value())); }

 private:
  Probe* port_;
  Log<std::string>* log_;
};

int connect_to(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// Sends `text` and reads the reply ("" at EOF or on error).
std::string ask(int fd, const std::string& text) {
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) return {};
  char buf[256];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

TEST(ProcessCheckpoint, WithoutTcpRepairConnectionsCloseAndListenersStay) {
  Probe port;
  Log<std::string> log;
  Runtime rt(RuntimeConfig{.workers = 2});
  rt.spawn<Server>(&port, &log);
  ASSERT_TRUE(port.wait_for(1));
  const auto p = static_cast<std::uint16_t>(port.value());
  const int before = connect_to(p);
  ASSERT_GE(before, 0);
  ASSERT_EQ(ask(before, "a"), "ok:a");
  TempDir dir;
  const CheckpointResult result = rt.checkpoint_process(dir.path(), {.engine = simulated()});
  EXPECT_FALSE(result.kept_established_tcp);
  EXPECT_EQ(result.connections_closed, 1u);
  ASSERT_TRUE(rttest::wait_until([&] {
    for (const std::string& e : log.items()) {
      if (e == "closed:" + std::to_string(ECONNABORTED)) return true;
    }
    return false;
  })) << testing::PrintToString(log.items());
  char byte;
  EXPECT_LE(::read(before, &byte, 1), 0) << "the client sees its connection end";
  ::close(before);
  const int after = connect_to(p);
  ASSERT_GE(after, 0) << "the listener accepts after the checkpoint";
  EXPECT_EQ(ask(after, "b"), "ok:b");
  ::close(after);
}

TEST(ProcessCheckpoint, WithTcpRepairConnectionsStayOpen) {
  Probe port;
  Log<std::string> log;
  Runtime rt(RuntimeConfig{.workers = 2});
  rt.spawn<Server>(&port, &log);
  ASSERT_TRUE(port.wait_for(1));
  const int fd = connect_to(static_cast<std::uint16_t>(port.value()));
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ask(fd, "a"), "ok:a");
  auto engine = simulated({.tcp_repair = true});
  TempDir dir;
  const CheckpointResult result = rt.checkpoint_process(dir.path(), {.engine = engine});
  EXPECT_TRUE(result.kept_established_tcp);
  EXPECT_EQ(result.connections_closed, 0u);
  EXPECT_TRUE(engine->observations().at(0).keep_established_tcp);
  EXPECT_EQ(ask(fd, "b"), "ok:b");
  ::close(fd);
}

TEST(ProcessCheckpoint, RefusalsLeaveTheRuntimeRunning) {
  Log<int> log;
  Runtime rt(RuntimeConfig{.workers = 2});
  const ActorRef r = rt.spawn<Collector>(&log);
  TempDir dir;
  // Keeping connections the engine cannot keep.
  EXPECT_THROW(rt.checkpoint_process(dir.path(), {.engine = simulated(), .tcp = TcpCheckpointPolicy::kKeepEstablished}),
               CheckpointError);
  // A failing dump: the runtime resumes, tracking too.
  EXPECT_THROW(rt.checkpoint_process(dir.path(), {.engine = simulated({.fail = true})}), CheckpointError);
  EXPECT_FALSE(write_tracking_suspended());
  ASSERT_EQ(rt.send(r, Note{7}), SendResult::kOk);
  ASSERT_TRUE(log.wait_size(1));
}

class Blocker : public Reactor {
 public:
  explicit Blocker(rttest::Gate* gate) : gate_(gate) { handle<&Blocker::on_note>(); }
  void on_note(const Note&) { gate_->pass(); }

 private:
  rttest::Gate* gate_;
};

TEST(ProcessCheckpoint, ABarrierNotReachedInTimeThrowsAndDumpsNothing) {
  rttest::Gate gate;
  Runtime rt(RuntimeConfig{.workers = 2});
  SpawnOptions o;
  o.worker = 0;
  const ActorRef r = rt.spawn<Blocker>(o, &gate);
  ASSERT_EQ(rt.send(r, Note{}), SendResult::kOk);
  ASSERT_TRUE(gate.wait_entered());
  auto engine = simulated();
  TempDir dir;
  try {
    rt.checkpoint_process(dir.path(), {.engine = engine, .barrier_timeout = 100ms});
    ADD_FAILURE() << "no error";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("did not reach the barrier"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(engine->observations().empty());
  gate.open();
  EXPECT_TRUE(rt.wait_idle());
}

class CheckpointFromInside : public Reactor {
 public:
  explicit CheckpointFromInside(Log<std::string>* log) : log_(log) {}
  void on_start() override {
    try {
      Runtime::current()->checkpoint_process("/nonexistent", {.engine = std::make_shared<SimulatedCheckpoint>()});
      log_->add("no error");
    } catch (const std::logic_error&) {
      log_->add("logic_error");
    }
  }

 private:
  Log<std::string>* log_;
};

TEST(ProcessCheckpoint, AWorkerCannotCheckpoint) {
  Log<std::string> log;
  Runtime rt(RuntimeConfig{.workers = 1});
  rt.spawn<CheckpointFromInside>(&log);
  ASSERT_TRUE(log.wait_size(1));
  EXPECT_EQ(log.items()[0], "logic_error");
}

// ---- CRIU itself ------------------------------------------------------------------------------

TEST(Criu, DetectionAnswersWithOneSentence) {
  const CheckpointSupport support = criu_engine()->support();
  const CheckpointSupport again = criu_engine()->support();
  EXPECT_EQ(support.reason, again.reason) << "detected once";
  if (support.available) {
    EXPECT_FALSE(support.version.empty());
    return;
  }
  const std::string& why = support.reason;
  ASSERT_FALSE(why.empty());
  EXPECT_EQ(why.back(), '.') << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  // The known failure of these machines: Debian 12's CRIU on a kernel whose vDSO it misreads.
  if (support.version == "CRIU 3.17.1") {
    utsname u{};
    ::uname(&u);
    if (std::strncmp(u.release, "6.1.", 4) != 0 && why.find("vDSO") != std::string::npos) {
      EXPECT_NE(why.find("CRIU 4.1"), std::string::npos) << why;
      EXPECT_NE(why.find(u.release), std::string::npos) << why;
    }
  }
  TempDir dir;
  Runtime rt(RuntimeConfig{.workers = 1});
  try {
    rt.checkpoint_process(dir.path());
    ADD_FAILURE() << "CRIU unavailable, yet the checkpoint succeeded";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(std::string(e.what()), why) << "the call reports the detection's sentence";
  }
  EXPECT_THROW(restore_process(dir.path()), CheckpointError);
}

// A real dump and restore: a child process runs a runtime with a listener, checkpoints itself
// (killed by the dump), and is restored as this process's child; the restored listener answers.
TEST(Criu, DumpsAndRestoresARunningRuntime) {
  const CheckpointSupport support = criu_engine()->support();
  if (!support.available) GTEST_SKIP() << "this machine cannot run CRIU: " << support.reason;
  TempDir dir;
  int ports[2];
  ASSERT_EQ(::pipe(ports), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ports[0]);
    Probe port;
    Log<std::string> log;
    Runtime rt(RuntimeConfig{.workers = 2});
    rt.spawn<Server>(&port, &log);
    if (!port.wait_for(1)) ::_exit(2);
    const auto p = static_cast<std::uint16_t>(port.value());
    try {
      const CheckpointResult r =
          rt.checkpoint_process(dir.path(), {.tcp = TcpCheckpointPolicy::kCloseConnections, .leave_running = false});
      if (r.outcome == DumpOutcome::kDumped) {
        [[maybe_unused]] auto n = ::write(ports[1], &p, sizeof p);
        ::_exit(0);
      }
    } catch (const std::exception&) {
      ::_exit(3);
    }
    // Restored: serve until killed.
    for (;;) std::this_thread::sleep_for(1s);
  }
  ::close(ports[1]);
  std::uint16_t p = 0;
  const ssize_t got = ::read(ports[0], &p, sizeof p);
  ::close(ports[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  // CRIU is usable here (support() said so), so a dump that did not complete is a failure.
  if (got != sizeof p) {
    std::ifstream dump_log(dir / "dump.log");
    const std::string text((std::istreambuf_iterator<char>(dump_log)),
                           std::istreambuf_iterator<char>());
    FAIL() << "the dump did not complete (the child's wait status: " << status << "); dump.log:\n"
           << text;
  }
  const pid_t restored = restore_process(dir.path());
  ASSERT_GT(restored, 0);
  const int fd = connect_to(p);
  EXPECT_GE(fd, 0);
  if (fd >= 0) {
    EXPECT_EQ(ask(fd, "r"), "ok:r");
    ::close(fd);
  }
  ::kill(restored, SIGKILL);
  ::waitpid(restored, &status, 0);
}

}  // namespace
}  // namespace reheap::checkpoint_test
