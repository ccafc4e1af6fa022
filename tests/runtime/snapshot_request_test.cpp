// Snapshot requests (Reactor::request_snapshot): the answer arrives as a SnapshotDone message, the
// file holds the target as of the request's place in its mailbox, the requester keeps working
// while the target's worker is busy, every failure is an answer, an answer to a requester that is
// gone is a dead letter, a reactor can snapshot itself, and requests share one chain of
// increments with the blocking Runtime::snapshot.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap::snapshot_request_test {
namespace {

using rttest::Gate;
using rttest::Log;
using rttest::Probe;
using rttest::TempDir;

// ---- the target ------------------------------------------------------------------------------

struct Push {
  std::int64_t value;
};
struct Fill {
  std::uint64_t bytes;  // non-zero bytes to hold in the heap
};
struct Block {};         // holds the target's worker in a Gate
struct BlockThenStop {}; // the same, then stops the target
struct Dump {
  ActorRef reply_to;
};
struct Numbers {
  std::vector<std::int64_t> values;
  std::uint64_t restored = 0;
  MSGPACK_DEFINE(values, restored)
};

// Keeps the numbers it is pushed in its heap.
class Target : public Reactor {
 public:
  explicit Target(Gate* gate) : gate_(gate) {
    handle<&Target::on_push>();
    handle<&Target::on_fill>();
    handle<&Target::on_block>();
    handle<&Target::on_block_then_stop>();
    handle<&Target::on_dump>();
  }
  void on_push(const Push& p) { numbers_.values.push_back(p.value); }
  void on_fill(const Fill& f) {
    ballast_.resize(f.bytes);
    for (std::size_t i = 0; i < ballast_.size(); ++i) ballast_[i] = static_cast<char>(1 + i % 251);
  }
  void on_block(const Block&) { gate_->pass(); }
  void on_block_then_stop(const BlockThenStop&) {
    gate_->pass();
    stop();
  }
  void on_dump(const Dump& d) { send(d.reply_to, numbers_); }
  void on_restored() override { ++numbers_.restored; }

 private:
  Gate* gate_;
  Numbers numbers_;
  std::vector<char> ballast_;
};

class Collector : public Reactor {
 public:
  explicit Collector(Log<Numbers>* log) : log_(log) { handle<&Collector::on_numbers>(); }
  void on_numbers(const Numbers& n) { log_->add(n); }

 private:
  Log<Numbers>* log_;
};

// ---- the requester ---------------------------------------------------------------------------

// Pushes `before` numbers to the target, requests a snapshot to each file in turn (in one hook),
// then pushes `after` more. Numbers pushed are 0, 1, 2, ... across Asks.
struct Ask {
  ActorRef target;
  std::vector<std::string> files;
  std::uint8_t kind = 0;  // SnapshotKind
  std::int64_t before = 0;
  std::int64_t after = 0;
  MSGPACK_DEFINE(target, files, kind, before, after)
};
struct Ping {
  std::uint64_t n;
};

// What a requester heard: the answer and who sent it.
struct Heard {
  SnapshotDone done;
  ActorRef sender;
};

class Requester : public Reactor {
 public:
  Requester(Log<Heard>* heard, Log<SnapshotRequestId>* issued, Probe* pings)
      : heard_(heard), issued_(issued), pings_(pings) {
    handle<&Requester::on_ask>();
    handle<&Requester::on_ping>();
    handle<&Requester::on_done>();
  }
  void on_ask(const Ask& a) {
    for (std::int64_t i = 0; i < a.before; ++i) send(a.target, Push{next_++});
    for (const std::string& file : a.files) {
      issued_->add(request_snapshot(a.target, file, static_cast<SnapshotKind>(a.kind)));
    }
    for (std::int64_t i = 0; i < a.after; ++i) send(a.target, Push{next_++});
  }
  void on_ping(const Ping& p) { pings_->done(p.n); }
  void on_done(const SnapshotDone& d) { heard_->add(Heard{d, sender()}); }

 private:
  Log<Heard>* heard_;
  Log<SnapshotRequestId>* issued_;
  Probe* pings_;
  std::int64_t next_ = 0;
};

// Snapshots itself in the middle of a hook, and keeps changing afterwards.
struct SaveYourself {
  std::string file;
  MSGPACK_DEFINE(file)
};
class SelfSaver : public Reactor {
 public:
  explicit SelfSaver(Log<Heard>* heard) : heard_(heard) {
    handle<&SelfSaver::on_save>();
    handle<&SelfSaver::on_done>();
    handle<&SelfSaver::on_dump>();
  }
  void on_save(const SaveYourself& s) {
    numbers_.values.push_back(1);
    request_snapshot(self(), s.file);
    numbers_.values.push_back(2);  // before the snapshot: it is taken after this hook
  }
  void on_done(const SnapshotDone& d) {
    numbers_.values.push_back(3);
    heard_->add(Heard{d, sender()});
  }
  void on_dump(const Dump& d) { send(d.reply_to, numbers_); }
  void on_restored() override { ++numbers_.restored; }

 private:
  Log<Heard>* heard_;
  Numbers numbers_;
};

std::vector<std::int64_t> iota(std::int64_t n) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(i);
  return v;
}

std::string describe(const SnapshotDone& d) {
  return std::string(to_string(d.snapshot_status())) + " (" + d.file + "): " + d.error;
}

class SnapshotRequestTest : public testing::Test {
 protected:
  SnapshotRequestTest() {
    target = rt.spawn<Target>(on(1), &gate);
    requester = rt.spawn<Requester>(on(0), &heard, &issued, &pings);
    collector = rt.spawn<Collector>(on(0), &dumps);
  }
  ~SnapshotRequestTest() override { gate.open(); }  // a failed test must not hold a worker

  static SpawnOptions on(int worker) {
    SpawnOptions o;
    o.worker = worker;
    return o;
  }
  std::string file(const std::string& name) const { return (dir / name).string(); }
  // Sends `ask` and waits for the answers to reach `total`; returns the last `ask.files.size()`.
  std::vector<Heard> ask_and_wait(const Ask& ask, std::size_t total) {
    EXPECT_EQ(rt.send(requester, ask), SendResult::kOk);
    EXPECT_TRUE(heard.wait_size(total));
    std::vector<Heard> all = heard.items();
    const std::size_t n = std::min(ask.files.size(), all.size());
    return std::vector<Heard>(all.end() - static_cast<std::ptrdiff_t>(n), all.end());
  }
  Numbers dump(ActorRef of) {
    const std::size_t before = dumps.size();
    EXPECT_EQ(rt.send(of, Dump{collector}), SendResult::kOk);
    EXPECT_TRUE(dumps.wait_size(before + 1));
    const std::vector<Numbers> all = dumps.items();
    return all.size() > before ? all.back() : Numbers{};
  }
  // Returns once the requester has handled everything sent to it before: what it sent the target
  // then is in the target's mailbox ahead of anything the test sends next.
  void settle_requester() {
    const std::uint64_t calls = pings.calls();
    ASSERT_EQ(rt.send(requester, Ping{0}), SendResult::kOk);
    ASSERT_TRUE(pings.wait_for(calls + 1));
  }
  void stop_and_wait(ActorRef ref) {
    ASSERT_TRUE(rt.stop(ref));
    ASSERT_TRUE(rt.wait_stopped(ref));
  }

  TempDir dir;
  Gate gate;
  Log<Heard> heard;
  Log<SnapshotRequestId> issued;
  Log<Numbers> dumps;
  Probe pings;
  Runtime rt{RuntimeConfig{.workers = 2}};
  ActorRef target;
  ActorRef requester;
  ActorRef collector;
};

TEST_F(SnapshotRequestTest, TheAnswerDescribesTheFileWhichHoldsTheTargetAsOfTheRequest) {
  const std::vector<Heard> got =
      ask_and_wait(Ask{target, {file("t.snap")}, 0, /*before=*/300, /*after=*/50}, 1);
  ASSERT_EQ(got.size(), 1u);
  const SnapshotDone& d = got[0].done;
  ASSERT_TRUE(d.ok()) << describe(d);
  EXPECT_EQ(d.request, 1u);
  EXPECT_EQ(issued.items(), std::vector<SnapshotRequestId>{1});
  EXPECT_EQ(d.target, target);
  EXPECT_EQ(got[0].sender, target) << "the answer comes in the target's name";
  EXPECT_EQ(d.file, file("t.snap"));
  EXPECT_TRUE(d.error.empty());
  EXPECT_EQ(d.info().kind, SnapshotKind::kFull);
  EXPECT_GT(d.pages_written, 0u);
  EXPECT_EQ(d.bytes_written, std::filesystem::file_size(file("t.snap")));
  EXPECT_EQ(verify_snapshot(file("t.snap")).id, d.id);

  // The numbers sent before the request are in the file, those sent after are not.
  EXPECT_EQ(dump(target).values, iota(350));
  stop_and_wait(target);
  ASSERT_EQ(rt.restore(file("t.snap")), target);
  const Numbers restored = dump(target);
  EXPECT_EQ(restored.values, iota(300));
  EXPECT_EQ(restored.restored, 1u);
}

TEST_F(SnapshotRequestTest, TheRequesterKeepsWorkingWhileTheTargetsWorkerIsBusy) {
  // The target's worker is held; the request waits in the target's mailbox behind the hold.
  ASSERT_EQ(rt.send(target, Block{}), SendResult::kOk);
  ASSERT_TRUE(gate.wait_entered());
  ASSERT_EQ(rt.send(requester, Ask{target, {file("busy.snap")}, 0, 10, 0}), SendResult::kOk);
  ASSERT_TRUE(issued.wait_size(1)) << "request_snapshot waited for the target";
  // The requester, and its worker, go on while the snapshot cannot have been taken.
  for (std::uint64_t n = 1; n <= 100; ++n) ASSERT_EQ(rt.send(requester, Ping{n}), SendResult::kOk);
  ASSERT_TRUE(pings.wait_for(100));
  EXPECT_EQ(pings.value(), 100u);
  EXPECT_EQ(heard.size(), 0u);
  EXPECT_FALSE(std::filesystem::exists(file("busy.snap")));
  gate.open();
  ASSERT_TRUE(heard.wait_size(1));
  EXPECT_TRUE(heard.items()[0].done.ok()) << describe(heard.items()[0].done);
  stop_and_wait(target);
  ASSERT_EQ(rt.restore(file("busy.snap")), target);
  EXPECT_EQ(dump(target).values, iota(10));
}

TEST_F(SnapshotRequestTest, FailuresAreAnswersAndLeaveTheTargetRunning) {
  // A directory that does not exist: the save fails on the target's worker.
  std::vector<Heard> got = ask_and_wait(Ask{target, {file("no/such/dir/t.snap")}, 0, 5, 0}, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].done.snapshot_status(), SnapshotStatus::kSnapshotError) << describe(got[0].done);
  EXPECT_EQ(got[0].done.snapshot_errc(), SnapshotErrc::kIo) << describe(got[0].done);
  EXPECT_NE(got[0].done.error.find("t.snap"), std::string::npos) << got[0].done.error;
  EXPECT_EQ(got[0].done.request, 1u);
  EXPECT_EQ(dump(target).values, iota(5)) << "the target was disturbed";

  // A target that has stopped: answered at once, and nothing is written.
  const ActorRef gone = rt.spawn<Target>(on(1), &gate);
  stop_and_wait(gone);
  got = ask_and_wait(Ask{gone, {file("gone.snap")}, 0, 0, 0}, 2);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].done.snapshot_status(), SnapshotStatus::kNoSuchReactor) << describe(got[0].done);
  EXPECT_EQ(got[0].done.target, gone);
  EXPECT_EQ(got[0].done.request, 2u);
  EXPECT_FALSE(std::filesystem::exists(file("gone.snap")));

  // A target that stops with the request in its mailbox.
  const ActorRef stopping = rt.spawn<Target>(on(1), &gate);
  ASSERT_EQ(rt.send(stopping, BlockThenStop{}), SendResult::kOk);
  ASSERT_TRUE(gate.wait_entered());
  ASSERT_EQ(rt.send(requester, Ask{stopping, {file("stopping.snap")}, 0, 0, 0}), SendResult::kOk);
  ASSERT_TRUE(issued.wait_size(3));
  gate.open();
  ASSERT_TRUE(heard.wait_size(3));
  const SnapshotDone last = heard.items().back().done;
  EXPECT_EQ(last.snapshot_status(), SnapshotStatus::kTargetStopped) << describe(last);
  EXPECT_EQ(last.target, stopping);
  EXPECT_EQ(last.request, 3u);
  EXPECT_FALSE(std::filesystem::exists(file("stopping.snap")));
  EXPECT_TRUE(rt.wait_idle());
}

TEST_F(SnapshotRequestTest, AnAnswerToARequesterThatStoppedIsADeadLetter) {
  ASSERT_EQ(rt.send(target, Block{}), SendResult::kOk);
  ASSERT_TRUE(gate.wait_entered());
  ASSERT_EQ(rt.send(requester, Ask{target, {file("orphan.snap")}, 0, 3, 0}), SendResult::kOk);
  ASSERT_TRUE(issued.wait_size(1));
  stop_and_wait(requester);
  const std::uint64_t dead = rt.stats().dead_letters;
  gate.open();
  // The save still happens; its answer has nobody to go to.
  ASSERT_TRUE(rttest::wait_until([&] { return rt.stats().dead_letters == dead + 1; }));
  EXPECT_TRUE(rt.wait_idle());
  EXPECT_EQ(rt.stats().messages_in_flight, 0u);
  EXPECT_EQ(heard.size(), 0u);
  stop_and_wait(target);
  ASSERT_EQ(rt.restore(file("orphan.snap")), target);
  EXPECT_EQ(dump(target).values, iota(3));
}

TEST_F(SnapshotRequestTest, AReactorSnapshotsItselfAfterTheHookThatAsked) {
  const ActorRef saver = rt.spawn<SelfSaver>(on(0), &heard);
  ASSERT_EQ(rt.send(saver, SaveYourself{file("self.snap")}), SendResult::kOk);
  ASSERT_TRUE(heard.wait_size(1));
  const Heard h = heard.items()[0];
  ASSERT_TRUE(h.done.ok()) << describe(h.done);
  EXPECT_EQ(h.done.target, saver);
  EXPECT_EQ(h.sender, saver);
  EXPECT_EQ(dump(saver).values, (std::vector<std::int64_t>{1, 2, 3}));
  stop_and_wait(saver);
  ASSERT_EQ(rt.restore(file("self.snap")), saver);
  const Numbers restored = dump(saver);
  EXPECT_EQ(restored.values, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(restored.restored, 1u);
}

TEST_F(SnapshotRequestTest, RequestsAndTheBlockingCallsBuildOneChainOfIncrements) {
  constexpr auto kInc = static_cast<std::uint8_t>(SnapshotKind::kIncremental);
  ASSERT_EQ(rt.send(requester, Ask{target, {}, 0, 100, 0}), SendResult::kOk);
  settle_requester();
  EXPECT_EQ(dump(target).values, iota(100));
  const SnapshotInfo full = rt.snapshot(target, file("full.snap"));
  // Three increments asked in one hook: they run in order, each on the previous one.
  const std::vector<Heard> got =
      ask_and_wait(Ask{target, {file("inc1.snap"), file("inc2.snap"), file("inc3.snap")}, kInc,
                       20, 0},
                   3);
  ASSERT_EQ(got.size(), 3u);
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].done.ok()) << describe(got[i].done);
    EXPECT_EQ(got[i].done.request, i + 1);
  }
  const SnapshotInfo after = rt.snapshot_increment(target, file("inc4.snap"));
  const bool tracked = got[0].done.fallback_reason.empty();
  if (tracked) {
    EXPECT_EQ(got[0].done.info().kind, SnapshotKind::kIncremental);
    EXPECT_EQ(got[0].done.parent_id, full.id) << "a request builds on the blocking save";
    EXPECT_EQ(got[1].done.parent_id, got[0].done.id);
    EXPECT_EQ(got[2].done.parent_id, got[1].done.id);
    EXPECT_EQ(after.parent_id, got[2].done.id) << "the blocking save builds on a request";
    EXPECT_LT(got[0].done.pages_written, full.pages_written);
  } else {
    std::printf("increments fell back to full snapshots: %s\n",
                got[0].done.fallback_reason.c_str());
  }
  // An increment over a file of its own chain is refused, as an answer.
  const std::vector<Heard> refused = ask_and_wait(Ask{target, {file("inc2.snap")}, kInc, 0, 0}, 4);
  ASSERT_EQ(refused.size(), 1u);
  if (tracked) {
    EXPECT_EQ(refused[0].done.snapshot_status(), SnapshotStatus::kSnapshotError);
    EXPECT_EQ(refused[0].done.snapshot_errc(), SnapshotErrc::kMisuse) << describe(refused[0].done);
  }
  ASSERT_EQ(rt.send(requester, Ask{target, {}, 0, 7, 0}), SendResult::kOk);  // lost below
  settle_requester();
  EXPECT_EQ(dump(target).values, iota(127));
  stop_and_wait(target);
  ASSERT_EQ(rt.restore(file("inc4.snap")), target);
  EXPECT_EQ(dump(target).values, iota(120));
}

TEST_F(SnapshotRequestTest, ConcurrentRequestersForOneTargetAreEachAnswered) {
  Log<Heard> heard2;
  Log<SnapshotRequestId> issued2;
  Probe pings2;
  const ActorRef other = rt.spawn<Requester>(on(1), &heard2, &issued2, &pings2);
  ASSERT_EQ(rt.send(requester, Ask{target, {file("a1"), file("a2"), file("a3")}, 0, 4, 0}),
            SendResult::kOk);
  ASSERT_EQ(rt.send(other, Ask{target, {file("b1"), file("b2"), file("b3")}, 0, 0, 0}),
            SendResult::kOk);
  ASSERT_TRUE(heard.wait_size(3));
  ASSERT_TRUE(heard2.wait_size(3));
  for (Log<Heard>* log : {&heard, &heard2}) {
    const std::vector<Heard> got = log->items();
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(got[i].done.ok()) << describe(got[i].done);
      EXPECT_EQ(got[i].done.request, i + 1) << "answers come in the order asked";
      EXPECT_EQ(verify_snapshot(got[i].done.file).id, got[i].done.id);
    }
  }
  EXPECT_EQ(issued2.items(), (std::vector<SnapshotRequestId>{1, 2, 3}));
}

// --helper full-disk-request <dir>
// In a private mount namespace (so this process must still be single-threaded), mounts a 1 MiB
// tmpfs on <dir>, asks for a snapshot of a target holding 4 MiB there, and prints the answer.
// Exits 77 when the mount cannot be made.
int full_disk_request(const std::vector<std::string>& args) {
  if (args.size() != 1) return 2;
  const std::filesystem::path mountpoint = args[0];
  if (::unshare(CLONE_NEWNS) != 0) {
    std::printf("unshare(CLONE_NEWNS): %s\n", std::strerror(errno));
    return 77;
  }
  ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
  if (::mount("tmpfs", mountpoint.c_str(), "tmpfs", 0, "size=1m") != 0) {
    std::printf("mount tmpfs: %s\n", std::strerror(errno));
    return 77;
  }
  int status = 1;
  {
    Gate gate;
    gate.open();
    Log<Heard> heard;
    Log<SnapshotRequestId> issued;
    Probe pings;
    Runtime rt(RuntimeConfig{.workers = 2});
    SpawnOptions on1;
    on1.worker = 1;
    const ActorRef target = rt.spawn<Target>(on1, &gate);
    const ActorRef requester = rt.spawn<Requester>(&heard, &issued, &pings);
    rt.send(target, Fill{4u << 20});
    rt.send(requester, Ask{target, {(mountpoint / "t.snap").string()}, 0, 1, 0});
    if (heard.wait_size(1)) {
      const SnapshotDone d = heard.items()[0].done;
      std::printf("answer: status %s, code %s, error: %s\n", to_string(d.snapshot_status()),
                  to_string(d.snapshot_errc()), d.error.c_str());
      if (d.snapshot_status() == SnapshotStatus::kSnapshotError &&
          d.snapshot_errc() == SnapshotErrc::kNoSpace) {
        status = 0;
      }
    } else {
      std::printf("no answer\n");
    }
    rt.shutdown();
  }
  ::umount2(mountpoint.c_str(), MNT_DETACH);
  return status;
}
const rttest::RegisterHelper kFullDiskRequest("full-disk-request", &full_disk_request);

TEST(SnapshotRequest, AFullDiskIsAnAnswerWithNoSpace) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root, and this test is not root";
  TempDir dir;
  std::filesystem::create_directory(dir / "tiny");
  const rttest::ChildResult child = rttest::run_helper("full-disk-request", {(dir / "tiny").string()});
  if (WIFEXITED(child.wait_status) && WEXITSTATUS(child.wait_status) == 77) {
    GTEST_SKIP() << "this machine does not let root mount a private tmpfs: " << child.output;
  }
  EXPECT_TRUE(child.succeeded()) << child.describe();
}

}  // namespace
}  // namespace reheap::snapshot_request_test
