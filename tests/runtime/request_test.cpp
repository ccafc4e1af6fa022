// Reactor::request and Reactor::reply between reactors of a Runtime, on different workers: the
// outcome of every request reaches its continuation exactly once, as an event of the asker.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap::request_test {
namespace {

using namespace std::chrono_literals;
using rttest::Log;
using rttest::TempDir;

struct Ping {
  std::uint64_t n;
};
struct Pong {
  std::uint64_t n;
};
// Echo keeps the reply address of a Hold and answers only at Release, in reverse order.
struct Hold {
  std::uint64_t n;
};
struct Release {
  std::uint64_t unused;
};
struct Unknown {
  std::uint64_t n;
};
struct Boom {
  std::uint64_t unused;
};
struct AlsoUnknown {
  std::uint64_t n;
};
// Asks the asker to send `count` requests of kind `hold` (0: Ping, 1: Hold) to `to`.
struct Go {
  std::uint64_t to;
  std::uint32_t count;
  std::uint32_t hold;
  std::int64_t timeout_ns;
};

struct Outcome {
  RequestId id = 0;
  std::uint64_t asked = 0;   // the n the request carried
  bool ok = false;
  std::uint64_t value = 0;   // the reply's n
  RequestError error = RequestError::kNone;
  SendResult refusal = SendResult::kOk;
  int worker = -1;
  bool operator==(const Outcome&) const = default;
};

class Echo : public Reactor {
 public:
  Echo() {
    handle<&Echo::on_ping>();
    handle<&Echo::on_hold>();
    handle<&Echo::on_release>();
  }
  void on_ping(const Ping& p) { reply(Pong{p.n + 1000}); }
  void on_hold(const Hold& h) { held_.emplace_back(reply_address(), h.n); }
  void on_release(const Release&) {
    for (auto it = held_.rbegin(); it != held_.rend(); ++it) reply(it->first, Pong{it->second + 1000});
    held_.clear();
  }

 private:
  std::vector<std::pair<ReplyAddress, std::uint64_t>> held_;
};

class Asker : public Reactor {
 public:
  explicit Asker(Log<Outcome>* log) : log_(log) {
    handle<&Asker::on_go>();
    handle<&Asker::on_boom>();
  }
  void on_boom(const Boom&) {
    next_n_ += 1000;
    throw std::runtime_error("boom: a handler failed on purpose");
  }
  void on_go(const Go& go) {
    for (std::uint32_t i = 0; i < go.count; ++i) {
      const std::uint64_t n = next_n_++;
      const ActorRef to(go.to);
      const auto timeout = std::chrono::nanoseconds(go.timeout_ns);
      const RequestId id = go.hold != 0 ? request<&Asker::on_pong>(to, Hold{n}, timeout)
                                        : request<&Asker::on_pong>(to, Ping{n}, timeout);
      asked_.emplace_back(id, n);
    }
  }
  void on_pong(const Response<Pong>& r) {
    Outcome o;
    o.id = r.id();
    for (const auto& [id, n] : asked_) {
      if (id == r.id()) o.asked = n;
    }
    o.ok = r.ok();
    if (r.ok()) o.value = r.value().n;
    o.error = r.error();
    o.refusal = r.refusal();
    o.worker = worker();
    log_->add(o);
  }
  // Replies never come here: they go to their continuation.
  void on_unhandled(const Message&) override { ++unhandled_; }

 private:
  Log<Outcome>* log_;
  std::uint64_t next_n_ = 1;
  std::uint64_t unhandled_ = 0;
  std::vector<std::pair<RequestId, std::uint64_t>> asked_;
};

RuntimeConfig two_workers() {
  RuntimeConfig config;
  config.workers = 2;
  config.placement = Placement::kFixed;
  return config;
}

SpawnOptions on_worker(int worker) {
  SpawnOptions options;
  options.worker = worker;
  return options;
}

Go go(ActorRef to, std::uint32_t count, bool hold, std::chrono::nanoseconds timeout) {
  return Go{to.value(), count, hold ? 1u : 0u, timeout.count()};
}

TEST(Request, AReplyFromAnotherWorkerReachesTheContinuationOnTheAskersWorker) {
  Runtime rt(two_workers());
  Log<Outcome> log;
  const ActorRef echo = rt.spawn<Echo>(on_worker(1));
  const ActorRef asker = rt.spawn<Asker>(on_worker(0), &log);
  rt.send(asker, go(echo, 1, false, 10s));
  ASSERT_TRUE(log.wait_size(1));
  const Outcome o = log.items()[0];
  EXPECT_TRUE(o.ok);
  EXPECT_EQ(o.value, 1001u);
  EXPECT_EQ(o.worker, 0);
  EXPECT_NE(o.id, 0u);
  ASSERT_TRUE(rt.wait_idle());
  EXPECT_EQ(rt.stats(asker).unhandled, 0u);
  EXPECT_EQ(rt.stats(asker).late_replies, 0u);
}

TEST(Request, ATargetThatDoesNotReplyTimesOut) {
  Runtime rt(two_workers());
  Log<Outcome> log;
  const ActorRef echo = rt.spawn<Echo>(on_worker(1));
  const ActorRef asker = rt.spawn<Asker>(on_worker(0), &log);
  rt.send(asker, go(echo, 1, true, 20ms));
  ASSERT_TRUE(log.wait_size(1));
  EXPECT_FALSE(log.items()[0].ok);
  EXPECT_EQ(log.items()[0].error, RequestError::kTimeout);
}

TEST(Request, ADeadOrUnknownTargetIsARefusalDeliveredAsAnEvent) {
  Runtime rt(two_workers());
  Log<Outcome> log;
  const ActorRef echo = rt.spawn<Echo>(on_worker(1));
  ASSERT_TRUE(rt.stop(echo));
  ASSERT_TRUE(rt.wait_stopped(echo));
  const ActorRef asker = rt.spawn<Asker>(on_worker(0), &log);
  rt.send(asker, go(echo, 1, false, 10s));
  rt.send(asker, go(ActorRef(), 1, false, 10s));
  ASSERT_TRUE(log.wait_size(2));
  for (const Outcome& o : log.items()) {
    EXPECT_FALSE(o.ok);
    EXPECT_EQ(o.error, RequestError::kRefused);
    EXPECT_EQ(o.refusal, SendResult::kNoSuchReactor);
  }
}

// A bounded mailbox that is full refuses the request: the refusal arrives as an event, with why.
TEST(Request, AFullMailboxRefusesTheRequestAndTheContinuationSaysSo) {
  struct Block {
    std::uint64_t unused;
  };
  class Blocked : public Echo {
   public:
    explicit Blocked(rttest::Gate* gate) : gate_(gate) { handle<&Blocked::on_block>(); }
    void on_block(const Block&) { gate_->pass(); }

   private:
    rttest::Gate* gate_;
  };
  Runtime rt(two_workers());
  Log<Outcome> log;
  rttest::Gate gate;
  SpawnOptions bounded = on_worker(1);
  bounded.mailbox.capacity = 2;
  bounded.mailbox.overflow = OverflowPolicy::kReject;
  const ActorRef echo = rt.spawn<Blocked>(bounded, &gate);
  const ActorRef asker = rt.spawn<Asker>(on_worker(0), &log);
  ASSERT_EQ(rt.send(echo, Block{0}), SendResult::kOk);
  ASSERT_TRUE(gate.wait_entered());
  ASSERT_EQ(rt.send(echo, Ping{1}), SendResult::kOk);
  ASSERT_EQ(rt.send(echo, Ping{2}), SendResult::kOk);
  rt.send(asker, go(echo, 1, false, 60s));
  ASSERT_TRUE(log.wait_size(1));
  gate.open();
  EXPECT_FALSE(log.items()[0].ok);
  EXPECT_EQ(log.items()[0].error, RequestError::kRefused);
  EXPECT_EQ(log.items()[0].refusal, SendResult::kMailboxFull);
}

TEST(Request, AReplyAfterTheTimeoutIsDroppedAndCounted) {
  Runtime rt(two_workers());
  Log<Outcome> log;
  const ActorRef echo = rt.spawn<Echo>(on_worker(1));
  const ActorRef asker = rt.spawn<Asker>(on_worker(0), &log);
  rt.send(asker, go(echo, 1, true, 5ms));
  ASSERT_TRUE(log.wait_size(1));
  ASSERT_EQ(log.items()[0].error, RequestError::kTimeout);
  rt.send(echo, Release{0});
  ASSERT_TRUE(rttest::wait_until([&] { return rt.stats(asker).late_replies == 1; }));
  ASSERT_TRUE(rt.wait_idle());
  EXPECT_EQ(log.size(), 1u);
  EXPECT_EQ(rt.stats(asker).unhandled, 0u);
}

TEST(Request, ManyConcurrentRequestsWithInterleavedRepliesEachGetTheirOwn) {
  Runtime rt(two_workers());
  Log<Outcome> log;
  const ActorRef echo = rt.spawn<Echo>(on_worker(1));
  const ActorRef asker = rt.spawn<Asker>(on_worker(0), &log);
  // Held ones are answered in reverse order, between answers to immediate ones.
  rt.send(asker, go(echo, 200, true, 60s));
  rt.send(asker, go(echo, 200, false, 60s));
  ASSERT_TRUE(log.wait_size(200));
  rt.send(echo, Release{0});
  rt.send(asker, go(echo, 100, false, 60s));
  ASSERT_TRUE(log.wait_size(500));
  std::vector<RequestId> ids;
  for (const Outcome& o : log.items()) {
    ASSERT_TRUE(o.ok);
    EXPECT_EQ(o.value, o.asked + 1000) << "request " << o.id;
    ids.push_back(o.id);
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end());
  ASSERT_TRUE(rt.wait_idle());
  EXPECT_EQ(rt.stats(asker).late_replies, 0u);
}

TEST(Request, AMovedAskerKeepsItsPendingRequests) {
  Runtime rt(two_workers());
  Log<Outcome> log;
  const ActorRef echo = rt.spawn<Echo>(on_worker(1));
  const ActorRef asker = rt.spawn<Asker>(on_worker(0), &log);
  rt.send(asker, go(echo, 3, true, 60s));
  ASSERT_TRUE(rt.wait_idle());
  rt.move(asker, 1);
  rt.send(echo, Release{0});
  ASSERT_TRUE(log.wait_size(3));
  for (const Outcome& o : log.items()) {
    EXPECT_TRUE(o.ok);
    EXPECT_EQ(o.value, o.asked + 1000);
    EXPECT_EQ(o.worker, 1);
  }
}

TEST(Request, ARestoredAskerFailsItsPendingRequestsWithRestoredAndDropsTheirReplies) {
  TempDir dir;
  Runtime rt(two_workers());
  Log<Outcome> log;
  const ActorRef echo = rt.spawn<Echo>(on_worker(1));
  const ActorRef asker = rt.spawn<Asker>(on_worker(0), &log);
  rt.send(asker, go(echo, 2, true, 60s));
  ASSERT_TRUE(rt.wait_idle());
  rt.snapshot(asker, dir / "asker.snap");
  ASSERT_TRUE(rt.stop(asker));
  ASSERT_TRUE(rt.wait_stopped(asker));
  ASSERT_EQ(rt.restore(dir / "asker.snap"), asker);
  ASSERT_TRUE(log.wait_size(2));
  for (const Outcome& o : log.items()) {
    EXPECT_FALSE(o.ok);
    EXPECT_EQ(o.error, RequestError::kRestored);
  }
  // The replies Echo still owes were meant for the saved incarnation.
  rt.send(echo, Release{0});
  ASSERT_TRUE(rttest::wait_until([&] { return rt.stats(asker).late_replies == 2; }));
  // New requests of the restored asker get ids of a new epoch, and their replies.
  rt.send(asker, go(echo, 1, false, 60s));
  ASSERT_TRUE(log.wait_size(3));
  EXPECT_TRUE(log.items()[2].ok);
  EXPECT_NE(log.items()[2].id >> 32, log.items()[0].id >> 32);
}

// An exact restart (a recorded reactor under kRestart) loses nothing, pending requests included:
// the reply that comes after the restart reaches the continuation.
TEST(Request, AnExactRestartKeepsThePendingRequestsAndTheirRepliesArrive) {
  TempDir dir;
  Log<ReactorFailed> failures;
  RuntimeConfig config = two_workers();
  config.on_failure = [&failures](const ReactorFailed& f) { failures.add(f); };
  Runtime rt(config);
  Log<Outcome> log;
  const ActorRef echo = rt.spawn<Echo>(on_worker(1));
  SpawnOptions options = on_worker(0);
  options.policy = SupervisionPolicy::kRestart;
  options.recording.mode = RecordingMode::kFile;
  options.recording.directory = dir.path();
  options.recording.state_hash_every = 1;
  const ActorRef asker = rt.spawn<Asker>(options, &log);
  rt.send(asker, go(echo, 2, true, 60s));
  rt.send(asker, go(echo, 3, false, 60s));
  ASSERT_TRUE(log.wait_size(3));
  rt.send(asker, Boom{});
  ASSERT_TRUE(failures.wait_size(1));
  ASSERT_TRUE(rt.wait_idle());
  EXPECT_EQ(failures.items()[0].restart.rfind("exact", 0), 0u) << to_string(failures.items()[0]);
  rt.send(echo, Release{0});
  // The restart replays the recorded events, whose continuations log again (the log is outside
  // the heap): outcomes are told apart by request id, and a replayed one must be the same.
  std::map<RequestId, Outcome> by_id;
  ASSERT_TRUE(rttest::wait_until([&] {
    for (const Outcome& o : log.items()) {
      const auto [it, added] = by_id.emplace(o.id, o);
      EXPECT_EQ(it->second, o) << "a replayed continuation saw another outcome";
    }
    return by_id.size() == 5;
  }));
  for (const auto& [id, o] : by_id) {
    EXPECT_TRUE(o.ok) << id;
    EXPECT_EQ(o.value, o.asked + 1000);
  }
  ASSERT_TRUE(rt.wait_idle());
  EXPECT_EQ(rt.stats(asker).late_replies, 0u);
}

TEST(Request, AskFromOutsideGetsTheReplyOfReply) {
  Runtime rt(two_workers());
  const ActorRef echo = rt.spawn<Echo>(on_worker(1));
  SendResult sent = SendResult::kNoMemory;
  const std::optional<Pong> pong = rt.ask<Pong>(echo, Ping{5}, 10s, &sent);
  ASSERT_TRUE(pong.has_value());
  EXPECT_EQ(pong->n, 1005u);
  EXPECT_EQ(sent, SendResult::kOk);
  // Unanswered: nullopt once the timeout passes; a dead target: refused.
  EXPECT_FALSE(rt.ask<Pong>(echo, Hold{1}, 20ms, &sent).has_value());
  EXPECT_EQ(sent, SendResult::kOk);
  ASSERT_TRUE(rt.stop(echo));
  ASSERT_TRUE(rt.wait_stopped(echo));
  EXPECT_FALSE(rt.ask<Pong>(echo, Ping{1}, 10s, &sent).has_value());
  EXPECT_EQ(sent, SendResult::kNoSuchReactor);
}

TEST(Request, ReplyOutsideAMessageHandlerThrows) {
  struct Replier : Reactor {
    explicit Replier(Log<std::string>* log) : log_(log) {}
    void on_start() override {
      try {
        reply(Pong{1});
      } catch (const std::logic_error& e) {
        log_->add(e.what());
      }
    }
    Log<std::string>* log_;
  };
  Runtime rt(two_workers());
  Log<std::string> log;
  rt.spawn<Replier>(&log);
  ASSERT_TRUE(log.wait_size(1));
  EXPECT_NE(log.items()[0].find("no message is being handled"), std::string::npos);
}

TEST(Unhandled, AMessageTypeNoHandlerTakesIsReportedOncePerReactorTypeAndCountedEachTime) {
  Log<UnhandledMessage> reports;
  RuntimeConfig config = two_workers();
  config.on_unhandled = [&reports](const UnhandledMessage& m) { reports.add(m); };
  Runtime rt(config);
  const ActorRef a = rt.spawn<Echo>(on_worker(0));
  const ActorRef b = rt.spawn<Echo>(on_worker(1));
  for (int i = 0; i < 3; ++i) {
    rt.send(a, Unknown{1});
    rt.send(b, Unknown{1});
  }
  rt.send(b, AlsoUnknown{2});
  ASSERT_TRUE(rt.wait_idle());
  EXPECT_EQ(rt.stats(a).unhandled, 3u);
  EXPECT_EQ(rt.stats(b).unhandled, 4u);
  const std::vector<UnhandledMessage> got = reports.items();
  ASSERT_EQ(got.size(), 2u);
  std::vector<std::string> types;
  for (const UnhandledMessage& m : got) {
    EXPECT_NE(m.reactor_type.find("Echo"), std::string::npos) << m.reactor_type;
    types.push_back(m.message_type);
  }
  std::sort(types.begin(), types.end());
  EXPECT_NE(types[0].find("AlsoUnknown"), std::string::npos) << types[0];
  EXPECT_NE(types[1].find("Unknown"), std::string::npos) << types[1];
  EXPECT_EQ(got[0].message_type_id + got[1].message_type_id,
            message_type_id<Unknown>() + message_type_id<AlsoUnknown>());
}

TEST(Unhandled, WithoutAHookTheReportIsOneStderrLineNamingBothTypes) {
  Runtime rt(two_workers());
  const ActorRef a = rt.spawn<Echo>(on_worker(0));
  testing::internal::CaptureStderr();
  rt.send(a, Unknown{1});
  rt.send(a, Unknown{2});
  ASSERT_TRUE(rt.wait_idle());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("request_test::(anonymous namespace)::Echo"), std::string::npos) << err;
  EXPECT_NE(err.find("Unknown"), std::string::npos) << err;
}

}  // namespace
}  // namespace reheap::request_test
