// The placement policy (runtime.h, "Placement"; runtime/src/scheduling/placement.h): a chatty pair of
// reactors started on different workers ends up on one; pinned reactors never move; fan-in and
// fan-out move nothing; per-sender order holds while the policy moves reactors under load;
// RuntimeConfig::placement = kFixed turns it off.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "reheap/runtime.h"
#include "runtime_support.h"

// A named namespace: message type ids and handler tables go by the types' names, which must not
// repeat those of other test files (mailbox_test.cpp has its own Item and Sink).
namespace reheap::placement_test {
namespace {

using rttest::Probe;

// Enough round trips for many windows of the policy (a pair co-locates after two), few enough
// for the sanitizers.
constexpr std::uint32_t kRoundTrips = rttest::kSanitized ? 3'000 : 20'000;

struct Ping {
  std::uint32_t value;
};
struct Pong {
  std::uint32_t value;
};
struct Extra {
  std::uint32_t value;
};
struct Item {
  std::uint32_t seq;
};

// What a pair reports when its last round trip is done (in the test's memory).
struct PairReport {
  Probe finished;                 // value: the pinger's worker at the end
  std::uint64_t disorders = 0;    // written on the pinger's worker before finished.done
};

// Answers each Ping with a Pong, then an Extra carrying the same value (two messages, so that
// per-sender order between them is checked across moves).
class Ponger : public Reactor {
 public:
  Ponger() { handle<&Ponger::on_ping>(); }
  void on_message(const Message& m) override {
    from_ = m.sender();
    Reactor::on_message(m);
  }

 private:
  void on_ping(const Ping& p) {
    send(from_, Pong{p.value});
    send(from_, Extra{p.value});
  }
  ActorRef from_;
};

// Sends Ping{1..rounds}, one at a time; checks that Pong{v} and then Extra{v} arrive for each v,
// and that Items from outside arrive in sequence.
class Pinger : public Reactor {
 public:
  Pinger(ActorRef peer, std::uint32_t rounds, PairReport* report)
      : peer_(peer), rounds_(rounds), report_(report) {
    handle<&Pinger::on_pong>();
    handle<&Pinger::on_extra>();
    handle<&Pinger::on_item>();
  }
  void on_start() override { send(peer_, Ping{1}); }

 private:
  void on_pong(const Pong& p) {
    if (p.value != sent_ || got_pong_) ++disorders_;
    got_pong_ = true;
  }
  void on_extra(const Extra& e) {
    if (e.value != sent_ || !got_pong_) ++disorders_;
    got_pong_ = false;
    if (sent_ == rounds_) {
      report_->disorders = disorders_;
      report_->finished.done(static_cast<std::uint64_t>(worker()));
      return;
    }
    send(peer_, Ping{++sent_});
  }
  void on_item(const Item& i) {
    if (i.seq != next_item_) ++disorders_;
    next_item_ = i.seq + 1;
  }

  ActorRef peer_;
  std::uint32_t rounds_;
  PairReport* report_;
  std::uint32_t sent_ = 1;
  bool got_pong_ = false;
  std::uint32_t next_item_ = 0;
  std::uint64_t disorders_ = 0;
};

SpawnOptions on(int worker) {
  SpawnOptions options;
  options.worker = worker;
  return options;
}

TEST(Placement, AChattyPairStartedOnDifferentWorkersEndsOnOneWithItsMessagesInOrder) {
  Runtime rt(RuntimeConfig{.workers = 2});
  PairReport report;
  // Round robin: consecutive spawns without a worker start on different workers.
  const ActorRef pong = rt.spawn<Ponger>();
  const ActorRef ping = rt.spawn<Pinger>(pong, kRoundTrips, &report);
  ASSERT_TRUE(report.finished.wait_for(1));
  EXPECT_EQ(report.disorders, 0u) << "a move reordered messages of one sender";
  EXPECT_EQ(static_cast<int>(report.finished.value()), rt.stats(pong).worker)
      << "the pair is still on two workers";
  EXPECT_GE(rt.stats().placement_moves, 1u);
  EXPECT_LE(rt.stats().placement_moves, 2u) << "one move brings a pair together";
  EXPECT_EQ(rt.stats(ping).moves + rt.stats(pong).moves, rt.stats().placement_moves);
}

TEST(Placement, ReactorsSpawnedOnAWorkerArePinnedThere) {
  Runtime rt(RuntimeConfig{.workers = 2});
  PairReport report;
  const ActorRef pong = rt.spawn<Ponger>(on(1));
  const ActorRef ping = rt.spawn<Pinger>(on(0), pong, kRoundTrips, &report);
  ASSERT_TRUE(report.finished.wait_for(1));
  EXPECT_EQ(report.disorders, 0u);
  EXPECT_EQ(report.finished.value(), 0u);
  EXPECT_EQ(rt.stats(pong).worker, 1);
  EXPECT_EQ(rt.stats(ping).moves + rt.stats(pong).moves, 0u);
  EXPECT_EQ(rt.stats().placement_moves, 0u);
}

TEST(Placement, AnUnpinnedPartnerComesToAPinnedOne) {
  // Either side of the pair pinned: whichever decides for the pair (placement.h), the pinned one
  // stays and the other comes.
  for (const bool pin_ponger : {true, false}) {
    Runtime rt(RuntimeConfig{.workers = 2});
    PairReport report;
    const ActorRef pong = rt.spawn<Ponger>(on(pin_ponger ? 1 : kAnyWorker));
    const int pong_start = rt.stats(pong).worker;
    const int ping_worker = pong_start == 0 ? 1 : 0;  // apart
    const ActorRef ping =
        rt.spawn<Pinger>(on(pin_ponger ? kAnyWorker : ping_worker), pong, kRoundTrips, &report);
    ASSERT_TRUE(report.finished.wait_for(1));
    EXPECT_EQ(report.disorders, 0u);
    EXPECT_EQ(static_cast<int>(report.finished.value()), rt.stats(pong).worker)
        << "pin_ponger " << pin_ponger;
    const ActorRef pinned = pin_ponger ? pong : ping;
    EXPECT_EQ(rt.stats(pinned).moves, 0u) << "a pinned reactor moved";
    EXPECT_EQ(rt.stats(pinned).worker, pin_ponger ? 1 : ping_worker);
  }
}

TEST(Placement, MovingAReactorPinsIt) {
  Runtime rt(RuntimeConfig{.workers = 2});
  PairReport report;
  const ActorRef pong = rt.spawn<Ponger>(on(1));
  const ActorRef ping = rt.spawn<Pinger>(on(0), pong, kRoundTrips, &report);
  rt.move(ping, 0);  // now pinned by the move too; both pinned: they stay apart
  ASSERT_TRUE(report.finished.wait_for(1));
  EXPECT_EQ(report.finished.value(), 0u);
  EXPECT_EQ(rt.stats(pong).worker, 1);
  EXPECT_EQ(rt.stats().placement_moves, 0u);
  static_cast<void>(ping);
}

TEST(Placement, FixedPlacementLeavesAPairWhereItStarted) {
  Runtime rt(RuntimeConfig{.workers = 2, .placement = Placement::kFixed});
  PairReport report;
  const ActorRef pong = rt.spawn<Ponger>();
  const ActorRef ping = rt.spawn<Pinger>(pong, kRoundTrips, &report);
  ASSERT_TRUE(report.finished.wait_for(1));
  EXPECT_NE(static_cast<int>(report.finished.value()), rt.stats(pong).worker);
  EXPECT_EQ(rt.stats(ping).moves + rt.stats(pong).moves, 0u);
  EXPECT_EQ(rt.stats().placement_moves, 0u);
}

TEST(Placement, OrderFromEverySenderHoldsWhileThePolicyMovesTheReceiver) {
  Runtime rt(RuntimeConfig{.workers = 2});
  PairReport report;
  const ActorRef pong = rt.spawn<Ponger>();
  const ActorRef ping = rt.spawn<Pinger>(pong, kRoundTrips * 4, &report);
  // An outside sender streams into the pinger while the pair plays and is brought together.
  std::uint32_t seq = 0;
  while (report.finished.calls() == 0 && seq < kRoundTrips * 4) {
    for (int burst = 0; burst < 8; ++burst) ASSERT_EQ(rt.send(ping, Item{seq++}), SendResult::kOk);
    std::this_thread::yield();
  }
  ASSERT_TRUE(report.finished.wait_for(1));
  ASSERT_TRUE(rt.wait_idle());
  EXPECT_EQ(report.disorders, 0u);
  EXPECT_GE(rt.stats(ping).moves + rt.stats(pong).moves, 1u) << "nothing moved under load";
}

// ---- fan-in and fan-out -----------------------------------------------------------------------

struct Request {
  std::uint32_t seq;
};
struct Reply {
  std::uint32_t seq;
};

// Answers every Request to its sender.
class Server : public Reactor {
 public:
  Server() { handle<&Server::on_request>(); }
  void on_message(const Message& m) override {
    from_ = m.sender();
    Reactor::on_message(m);
  }

 private:
  void on_request(const Request& r) { send(from_, Reply{r.seq}); }
  ActorRef from_;
};

struct StartRequests {};

// Tells every client to start, in one handler (so within microseconds, whatever the load).
class Starter : public Reactor {
 public:
  explicit Starter(std::vector<ActorRef> clients) : clients_(clients.begin(), clients.end()) {}
  void on_start() override {
    for (ActorRef c : clients_) send(c, StartRequests{});
  }

 private:
  std::vector<ActorRef> clients_;
};

// Once told to start, keeps two requests outstanding until `rounds` replies came back; every
// reply comes from the server, so each client's traffic is dominated by it. Clients start
// together: one that started while the others were still being spawned would have the server
// to itself for a while, and the two would rightly form a pair.
class Client : public Reactor {
 public:
  Client(ActorRef server, std::uint32_t rounds, Probe* done)
      : server_(server), rounds_(rounds), done_(done) {
    handle<&Client::on_reply>();
    handle<&Client::on_start_requests>();
  }

 private:
  void on_start_requests(const StartRequests&) {
    send(server_, Request{sent_++});
    send(server_, Request{sent_++});
  }
  void on_reply(const Reply&) {
    if (++replies_ == rounds_) done_->done(1);
    if (sent_ < rounds_) send(server_, Request{sent_++});
  }
  ActorRef server_;
  std::uint32_t rounds_;
  Probe* done_;
  std::uint32_t sent_ = 0;
  std::uint32_t replies_ = 0;
};

TEST(Placement, FanInWithRepliesFromManyClientsOnBothWorkersDoesNotThrash) {
  constexpr int kClients = 100;
  constexpr std::uint32_t kRounds = rttest::kSanitized ? 200 : 1'000;
  Runtime rt(RuntimeConfig{.workers = 2});
  Probe done;
  const ActorRef server = rt.spawn<Server>();
  std::vector<ActorRef> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(rt.spawn<Client>(server, kRounds, &done));
  rt.spawn<Starter>(clients);
  ASSERT_TRUE(done.wait_for(kClients));
  // The server hears from a hundred clients, none of which dominates its traffic: no pair forms
  // while they all run. At the very end, once every client but one has finished (under load they
  // finish far apart), the last one and the server are a chatty pair like any other, and may
  // rightly be brought together: one move at most.
  EXPECT_LE(rt.stats(server).moves, 1u);
  EXPECT_LE(rt.stats().placement_moves, 2u) << "fan-in moved reactors around";
  int on_zero = 0;
  for (ActorRef c : clients) on_zero += rt.stats(c).worker == 0 ? 1 : 0;
  EXPECT_GE(on_zero, kClients / 2 - 2) << "the clients piled onto one worker";
  EXPECT_LE(on_zero, kClients / 2 + 2) << "the clients piled onto one worker";
}

// Sends `per_sink` items to each sink, round robin.
class Broadcaster : public Reactor {
 public:
  Broadcaster(std::vector<ActorRef> sinks, std::uint32_t per_sink)
      : sinks_(sinks.begin(), sinks.end()), per_sink_(per_sink) {}
  void on_start() override {
    for (std::uint32_t i = 0; i < per_sink_; ++i) {
      for (ActorRef s : sinks_) send(s, Item{i});
    }
  }

 private:
  std::vector<ActorRef> sinks_;
  std::uint32_t per_sink_;
};

// Checks the order of its items and reports once it has `expected` of them.
class Sink : public Reactor {
 public:
  Sink(std::uint32_t expected, Probe* done) : expected_(expected), done_(done) {
    handle<&Sink::on_item>();
  }

 private:
  void on_item(const Item& i) {
    if (i.seq != got_) return;  // out of order: never reports
    if (++got_ == expected_) done_->done(1);
  }
  std::uint32_t expected_;
  Probe* done_;
  std::uint32_t got_ = 0;
};

TEST(Placement, FanOutToManySinksMovesNothing) {
  constexpr int kSinks = 100;
  constexpr std::uint32_t kPerSink = rttest::kSanitized ? 300 : 2'000;
  Runtime rt(RuntimeConfig{.workers = 2});
  Probe done;
  std::vector<ActorRef> sinks;
  for (int i = 0; i < kSinks; ++i) sinks.push_back(rt.spawn<Sink>(kPerSink, &done));
  // Each sink hears only from the broadcaster, which hears from nobody: not a pair.
  rt.spawn<Broadcaster>(sinks, kPerSink);
  ASSERT_TRUE(done.wait_for(kSinks));
  EXPECT_EQ(rt.stats().placement_moves, 0u);
}

}  // namespace
}  // namespace reheap::placement_test
