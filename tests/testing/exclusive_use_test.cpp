// A TestRuntime or a Replay runs its reactors on the calling thread: a second thread calling into
// one while the first is inside gets a std::logic_error naming both operations and changes
// nothing; once the first is out, another thread may use it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>

#include "replay_support.h"
#include "reheap/testing/replay.h"
#include "reheap/testing/test_runtime.h"

namespace exclusive_use_test {
namespace {

using namespace std::chrono_literals;
using reheap::ActorRef;
using reheap::Reactor;
using reheap::testing::Replay;
using reheap::testing::TestRuntime;

struct Ping {
  int n;
};

class Counter : public Reactor {
 public:
  Counter() { handle<&Counter::on_ping>(); }
  void on_ping(const Ping&) { ++pings_; }
  int pings() const { return pings_; }

 private:
  int pings_ = 0;
};

// Thread B makes `attempt` while this thread is inside `enter`, held there by the predicate it
// passes until B has tried. Returns what B's attempt threw.
std::string attempt_while_inside(const std::function<void(const std::function<bool()>&)>& enter,
                                 const std::function<void()>& attempt) {
  std::atomic<bool> inside{false};
  std::atomic<bool> tried{false};
  std::string thrown = "nothing thrown";
  std::thread other([&] {
    while (!inside.load()) std::this_thread::yield();
    try {
      attempt();
    } catch (const std::logic_error& e) {
      thrown = e.what();
    }
    tried.store(true);
  });
  enter([&] {
    inside.store(true);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!tried.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    return true;
  });
  other.join();
  return thrown;
}

TEST(ExclusiveUse, ASecondThreadCallingIntoATestRuntimeWhileOneRunsItIsRefused) {
  TestRuntime rt;
  const ActorRef counter = rt.spawn<Counter>();
  rt.run();
  const std::string thrown = attempt_while_inside([&](const std::function<bool()>& pred) { rt.run_until(pred); },
                                                  [&] { rt.send(counter, Ping{1}); });
  EXPECT_NE(thrown.find("reheap::testing::TestRuntime::send: called while another thread is inside "
                        "reheap::testing::TestRuntime::run_until"),
            std::string::npos)
      << thrown;
  rt.run();
  EXPECT_EQ(rt.reactor<Counter>(counter).pings(), 0) << "the refused send sent nothing";

  // Once the first thread is out, another may use it.
  std::thread([&] {
    rt.send(counter, Ping{2});
    rt.run();
  }).join();
  EXPECT_EQ(rt.reactor<Counter>(counter).pings(), 1);
}

TEST(ExclusiveUse, AThreadInsideATestRuntimeMayCallIntoItAgain) {
  TestRuntime rt;
  const ActorRef counter = rt.spawn<Counter>();
  int sent = 0;
  rt.run_until([&] {
    if (sent < 3) rt.send(counter, Ping{++sent});
    return rt.reactor<Counter>(counter).pings() == 3;
  });
  EXPECT_EQ(rt.reactor<Counter>(counter).pings(), 3);
}

TEST(ExclusiveUse, ASecondThreadSteppingAReplayWhileOneRunsItIsRefused) {
  replay_test::TempDir dir;
  const replay_test::LedgerRun run = replay_test::record_ledger(dir.path());
  Replay replay = Replay::open(run.recording);
  const std::string thrown = attempt_while_inside(
      [&](const std::function<bool()>& pred) { replay.run_until(pred); }, [&] { replay.step(); });
  EXPECT_NE(thrown.find("reheap::testing::Replay::step: called while another thread is inside "
                        "reheap::testing::Replay::run_until"),
            std::string::npos)
      << thrown;
  EXPECT_EQ(replay.position(), 0u) << "the refused step delivered nothing";
  std::thread([&] { EXPECT_TRUE(replay.step()); }).join();
  EXPECT_EQ(replay.position(), 1u);
}

}  // namespace
}  // namespace exclusive_use_test
