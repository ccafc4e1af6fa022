// Misuse: Reactor operations outside the reactor's own hooks, blocking Runtime calls on a worker
// thread, spawns on workers that do not exist, constructors that throw or send, and null
// references. Each is refused with an exception or a SendResult, and leaves nothing behind.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "reheap/runtime.h"
#include "reheap/zone.h"
#include "runtime_support.h"

namespace reheap::misuse_test {
namespace {

using namespace std::chrono_literals;
using rttest::Log;
using rttest::Probe;

struct Ping {
  int n;
};

// Hands its address to the test from its constructor, so the test can call its operations from
// the wrong thread.
class Exposed : public Reactor {
 public:
  explicit Exposed(Exposed** out) { *out = this; }
};

TEST(Misuse, ReactorOperationsCalledOutsideTheReactorsHooksThrowLogicError) {
  Runtime rt(RuntimeConfig{.workers = 1});
  Exposed* r = nullptr;
  const ActorRef ref = rt.spawn<Exposed>(&r);
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(rt.wait_idle());
  EXPECT_EQ(r->self(), ref);  // self() is plain data, valid anywhere
  EXPECT_THROW(r->send(ref, Ping{1}), std::logic_error);
  EXPECT_THROW(r->runtime(), std::logic_error);
  EXPECT_THROW(r->worker(), std::logic_error);
  EXPECT_THROW(r->stop(), std::logic_error);
  EXPECT_THROW(r->start_timer(1ms), std::logic_error);
  EXPECT_THROW(r->cancel_timer(1), std::logic_error);
  EXPECT_THROW(r->listen("127.0.0.1", 0), std::logic_error);
  EXPECT_THROW(r->connect("127.0.0.1", 1), std::logic_error);
  EXPECT_THROW(r->local_port(1), std::logic_error);
  EXPECT_THROW(r->write(1, std::span<const char>("x", 1)), std::logic_error);
  EXPECT_THROW(r->close(1), std::logic_error);
  EXPECT_THROW(r->set_no_delay(1, true), std::logic_error);
  EXPECT_TRUE(rt.alive(ref));
  EXPECT_EQ(rt.stats(ref).messages_out, 0u);
}

// Reports what each call it makes on another reactor, or on the runtime, throws.
struct Try {
  int unused;
};
class Meddler : public Reactor {
 public:
  Meddler(Exposed* other, ActorRef other_ref, Log<std::string>* log)
      : other_(other), other_ref_(other_ref), log_(log) {
    handle<&Meddler::on_try>();
  }
  void on_try(const Try&) {
    Runtime& rt = runtime();
    attempt("other.send", [&] { other_->send(self(), Ping{1}); });
    attempt("other.start_timer", [&] { other_->start_timer(1ms); });
    attempt("snapshot", [&] { rt.snapshot(self(), "/nonexistent/never.snap"); });
    attempt("snapshot_increment", [&] { rt.snapshot_increment(self(), "/nonexistent/x"); });
    attempt("stats", [&] { rt.stats(other_ref_); });
    attempt("move", [&] { rt.move(self(), 0); });
    attempt("wait_idle", [&] { rt.wait_idle(50ms); });
    attempt("wait_stopped", [&] { rt.wait_stopped(other_ref_, 50ms); });
    attempt("shutdown", [&] { rt.shutdown(); });
    // Non-blocking calls are fine from a reactor.
    log_->add(rt.stats().reactors == 2 ? "runtime stats ok" : "runtime stats wrong");
    log_->add(rt.alive(other_ref_) ? "alive ok" : "alive wrong");
    log_->add(Runtime::current() == &rt ? "current ok" : "current wrong");
  }

 private:
  void attempt(const std::string& what, const std::function<void()>& f) {
    try {
      f();
      log_->add(what + ": no exception");
    } catch (const std::logic_error&) {
      log_->add(what + ": logic_error");
    } catch (const std::exception& e) {
      log_->add(what + ": other exception: " + e.what());
    }
  }
  Exposed* other_;
  ActorRef other_ref_;
  Log<std::string>* log_;
};

TEST(Misuse, BlockingRuntimeCallsAndOtherReactorsOperationsThrowLogicErrorInsideAReactor) {
  Log<std::string> log;
  Runtime rt(RuntimeConfig{.workers = 1});
  Exposed* other = nullptr;
  const ActorRef other_ref = rt.spawn<Exposed>(&other);
  const ActorRef meddler = rt.spawn<Meddler>(other, other_ref, &log);
  ASSERT_EQ(rt.send(meddler, Try{}), SendResult::kOk);
  ASSERT_TRUE(log.wait_size(12));
  EXPECT_EQ(log.items(),
            (std::vector<std::string>{
                "other.send: logic_error", "other.start_timer: logic_error",
                "snapshot: logic_error", "snapshot_increment: logic_error", "stats: logic_error",
                "move: logic_error", "wait_idle: logic_error", "wait_stopped: logic_error",
                "shutdown: logic_error", "runtime stats ok", "alive ok", "current ok"}));
  EXPECT_TRUE(rt.alive(meddler));
  EXPECT_EQ(rt.stats().failures, 0u);
  EXPECT_EQ(Runtime::current(), nullptr) << "the test thread is no worker";
}

TEST(Misuse, SpawningOnAWorkerThatDoesNotExistThrowsAndLeavesNothingBehind) {
  Runtime rt(RuntimeConfig{.workers = 2});
  const std::size_t heaps = Zone::stats().live_heaps;
  Exposed* r = nullptr;
  for (int worker : {2, 3, -2, -100}) {
    SpawnOptions o;
    o.worker = worker;
    EXPECT_THROW(rt.spawn<Exposed>(o, &r), std::out_of_range) << "worker " << worker;
  }
  EXPECT_EQ(rt.stats().reactors, 0u);
  EXPECT_EQ(Zone::stats().live_heaps, heaps);
  SpawnOptions last;
  last.worker = 1;
  const ActorRef ok = rt.spawn<Exposed>(last, &r);
  EXPECT_EQ(rt.stats(ok).worker, 1);
}

class ThrowsInConstructor : public Reactor {
 public:
  ThrowsInConstructor(std::size_t bytes, bool std_exception) : kept_(bytes, 'k') {
    // std::invalid_argument keeps its message in memory allocated here, in the new heap.
    if (std_exception) throw std::invalid_argument("no, thanks: the constructor refuses");
    throw 7;
  }

 private:
  std::string kept_;
};

class SendsInConstructor : public Reactor {
 public:
  explicit SendsInConstructor(ActorRef to) { send(to, Ping{1}); }
};

TEST(Misuse, AConstructorThatThrowsOrSendsLeavesNoReactorBehindAndItsExceptionIntact) {
  const std::size_t heaps_before = Zone::stats().live_heaps;
  {
    Runtime rt(RuntimeConfig{.workers = 2});
    Exposed* witness = nullptr;
    const ActorRef other = rt.spawn<Exposed>(&witness);
    ASSERT_TRUE(rt.wait_idle());
    const std::size_t reactors = rt.stats().reactors;
    const std::size_t heaps = Zone::stats().live_heaps;
    EXPECT_THROW(rt.spawn<ThrowsInConstructor>(std::size_t{1} << 20, false), int);
    // A constructor runs on the spawning thread, outside any hook: it must not send.
    EXPECT_THROW(rt.spawn<SendsInConstructor>(other), std::logic_error);
    EXPECT_EQ(Zone::stats().live_heaps, heaps) << "the heap of a failed spawn stayed";
    try {
      rt.spawn<ThrowsInConstructor>(std::size_t{1} << 20, true);
      ADD_FAILURE() << "no exception";
    } catch (const std::invalid_argument& e) {
      // The message lives in the failed reactor's heap: it must still be readable here.
      EXPECT_STREQ(e.what(), "no, thanks: the constructor refuses");
    }
    EXPECT_EQ(rt.stats().reactors, reactors);
    EXPECT_TRUE(rt.wait_idle()) << "a failed spawn left a message in flight";
    EXPECT_EQ(rt.stats(other).messages_in, 0u);
    // Spawning goes on normally.
    const ActorRef again = rt.spawn<Exposed>(&witness);
    EXPECT_TRUE(rt.alive(again));
  }
  EXPECT_EQ(Zone::stats().live_heaps, heaps_before) << "a failed spawn's heap outlived the runtime";
}

TEST(Misuse, TheNullReferenceNamesNoReactor) {
  Runtime rt(RuntimeConfig{.workers = 1});
  Exposed* r = nullptr;
  rt.spawn<Exposed>(&r);
  EXPECT_EQ(rt.send(ActorRef{}, Ping{1}), SendResult::kNoSuchReactor);
  EXPECT_FALSE(rt.alive(ActorRef{}));
  EXPECT_FALSE(rt.stop(ActorRef{}));
  EXPECT_THROW(rt.stats(ActorRef{}), std::runtime_error);
  EXPECT_THROW(rt.move(ActorRef{}, 0), std::runtime_error);
  EXPECT_TRUE(rt.wait_idle(5s)) << "a message to the null reference is stuck in flight";
  // A reference that was never issued, too.
  EXPECT_EQ(rt.send(ActorRef{(std::uint64_t{7} << 32) | 12345}, Ping{1}),
            SendResult::kNoSuchReactor);
}

}  // namespace
}  // namespace reheap::misuse_test
