// Messaging: delivery, per-sender FIFO order, typed handlers, msgpack and raw payloads, decode
// errors, and sends to reactors that are gone.
#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "messaging/envelope.h"  // runtime/src: free_envelope and MessageAccess, for the forged envelopes below
#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap::messaging_test {
namespace {

using rttest::Probe;

struct Ping {
  std::uint64_t n;
};
struct Pong {
  std::uint64_t n;
};

// Counts to `rounds` with a peer, on whatever worker it runs.
class PingPong : public Reactor {
 public:
  PingPong(Probe* probe, std::uint64_t rounds) : probe_(probe), rounds_(rounds) {
    handle<&PingPong::on_ping>();
    handle<&PingPong::on_pong>();
  }
  void on_ping(const Ping& p) { send(current_sender_or(p), Pong{p.n}); }
  void on_pong(const Pong& p) {
    if (p.n + 1 >= rounds_) {
      probe_->done(p.n + 1);
      return;
    }
    send(peer_, Ping{p.n + 1});
  }
  void on_message(const Message& m) override {
    sender_ = m.sender();
    Reactor::on_message(m);
  }
  ActorRef peer_;

 private:
  ActorRef current_sender_or(const Ping&) const { return sender_; }
  Probe* probe_;
  std::uint64_t rounds_;
  ActorRef sender_;
};

struct Start {
  ActorRef peer;
};

class Pinger : public PingPong {
 public:
  using PingPong::PingPong;
  void on_start() override {}
};

TEST(Messaging, PingPongAcrossTwoWorkers) {
  Runtime rt(RuntimeConfig{.workers = 2});
  Probe probe;
  SpawnOptions a;
  a.worker = 0;
  SpawnOptions b;
  b.worker = 1;
  const ActorRef ponger = rt.spawn<PingPong>(b, &probe, 1000);
  // The pinger learns its peer through its constructor argument... a plain value.
  struct Kick : public PingPong {
    Kick(Probe* p, ActorRef peer) : PingPong(p, 1000) { peer_ = peer; }
    void on_start() override { send(peer_, Ping{0}); }
  };
  rt.spawn<Kick>(a, &probe, ponger);
  ASSERT_TRUE(probe.wait_for(1)) << "ping-pong did not finish";
  EXPECT_EQ(probe.value(), 1000u);
}

// A record of what arrived, per sender, in order.
struct Tagged {
  std::uint32_t sender;
  std::uint32_t seq;
};

class Recorder : public Reactor {
 public:
  explicit Recorder(Probe* probe, std::uint64_t expected) : probe_(probe), expected_(expected) {
    handle<&Recorder::on_tagged>();
  }
  void on_tagged(const Tagged& t) {
    auto& last = last_[t.sender];
    if (t.seq != last) ++out_of_order_;
    last = t.seq + 1;
    if (++received_ == expected_) probe_->done(out_of_order_);
  }

 private:
  Probe* probe_;
  std::uint64_t expected_;
  std::uint64_t received_ = 0;
  std::uint64_t out_of_order_ = 0;
  std::map<std::uint32_t, std::uint32_t> last_;  // in the reactor's heap
};

class Sender : public Reactor {
 public:
  Sender(ActorRef to, std::uint32_t id, std::uint32_t count) : to_(to), id_(id), count_(count) {}
  void on_start() override {
    for (std::uint32_t i = 0; i < count_; ++i) {
      while (send(to_, Tagged{id_, i}) != SendResult::kOk) {
      }
    }
  }

 private:
  ActorRef to_;
  std::uint32_t id_;
  std::uint32_t count_;
};

TEST(Messaging, PerSenderFifoWithManySendersOnBothWorkersAndOutside) {
  Runtime rt(RuntimeConfig{.workers = 2});
  Probe probe;
  constexpr std::uint32_t kSenders = 8;
  constexpr std::uint32_t kEach = 20'000;
  constexpr std::uint32_t kOutside = 2;
  const ActorRef recorder =
      rt.spawn<Recorder>(SpawnOptions{}, &probe, std::uint64_t{kSenders + kOutside} * kEach);
  for (std::uint32_t s = 0; s < kSenders; ++s) rt.spawn<Sender>(recorder, s, kEach);
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < kOutside; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint32_t i = 0; i < kEach; ++i) {
        ASSERT_EQ(rt.send(recorder, Tagged{kSenders + t, i}), SendResult::kOk);
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(probe.wait_for(1, std::chrono::seconds(60)));
  EXPECT_EQ(probe.value(), 0u) << "messages from one sender arrived out of order";
}

struct Greeting {
  std::string text;
  std::vector<int> numbers;
  std::map<std::string, double> table;
  MSGPACK_DEFINE(text, numbers, table)
};

class GreetingSink : public Reactor {
 public:
  explicit GreetingSink(Probe* probe) : probe_(probe) { handle<&GreetingSink::on_greeting>(); }
  void on_greeting(const Greeting& g) {
    // Decoded into this reactor's heap.
    const bool in_heap = Heap::owner_of(g.text.data()) != nullptr || g.text.size() < 16;
    kept_.push_back(g);
    probe_->done(in_heap && g.numbers.size() == 3 && g.table.at("pi") > 3.14 ? 1 : 2);
  }

 private:
  Probe* probe_;
  std::vector<Greeting> kept_;
};

TEST(Messaging, MsgpackTypesDecodeIntoTheReceiversHeap) {
  Runtime rt(RuntimeConfig{.workers = 2});
  Probe probe;
  const ActorRef sink = rt.spawn<GreetingSink>(&probe);
  Greeting g{std::string(100, 'x'), {1, 2, 3}, {{"pi", 3.14159}}};
  ASSERT_EQ(rt.send(sink, g), SendResult::kOk);
  ASSERT_TRUE(probe.wait_for(1));
  EXPECT_EQ(probe.value(), 1u);
}

struct WrongShape {
  std::string a;
  MSGPACK_DEFINE(a)
};

class DecodeErrors : public Reactor {
 public:
  explicit DecodeErrors(Probe* probe) : probe_(probe) { handle<&DecodeErrors::on_greeting>(); }
  void on_greeting(const Greeting&) { probe_->done(100); }
  void on_message_error(const MessageError& e) override {
    Reactor::on_message_error(e);
    probe_->done(1);
  }

 private:
  Probe* probe_;
};

// A sender-side name clash: a type whose message name equals Greeting's, with another shape.
struct Impostor {
  static constexpr std::string_view reheap_message_name = reheap::message_type_name<Greeting>();
  int a;
  double b;
  MSGPACK_DEFINE(a, b)
};

namespace raw_mismatch {

// Three senders' types under one message name: the receiver's raw type, a raw type of another
// size, and a msgpack type.
constexpr std::string_view kName = "raw_mismatch.Pair";
struct Pair {
  static constexpr std::string_view reheap_message_name = kName;
  std::uint64_t a;
  std::uint64_t b;
};
struct Short {
  static constexpr std::string_view reheap_message_name = kName;
  std::uint32_t a;
};
struct Packed {
  static constexpr std::string_view reheap_message_name = kName;
  static constexpr bool reheap_msgpack = true;
  std::uint64_t a;
  std::uint64_t b;
  MSGPACK_DEFINE(a, b)
};
static_assert(kRawMessage<Pair> && kRawMessage<Short> && !kRawMessage<Packed>);

// Reports a Pair as 1000 + a + b, an error as 1.
class PairSink : public Reactor {
 public:
  explicit PairSink(Probe* probe) : probe_(probe) { handle<&PairSink::on_pair>(); }
  void on_pair(const Pair& p) { probe_->done(1000 + p.a + p.b); }
  void on_message_error(const MessageError& e) override {
    Reactor::on_message_error(e);
    probe_->done(1);
  }

 private:
  Probe* probe_;
};

}  // namespace raw_mismatch

// A message as another build of the program could have written it (a replayed log, say): the
// id of one type and the payload of another, which no send of this process can make since a
// type id has one owner (type_clash_test.cpp).
template <class As, class T>
detail::Envelope* forge(const T& value) {
  SendResult result = SendResult::kOk;
  if constexpr (kRawMessage<T>) {
    return detail::make_raw_envelope(message_type_id<As>(), &value, sizeof value, &result);
  } else {
    msgpack::sbuffer& buffer = detail::encode_scratch();
    msgpack::pack(buffer, value);
    return detail::make_envelope_from_scratch(message_type_id<As>(), &result);
  }
}

// Hands `e` to `r`'s handlers the way a worker does, then frees it.
void deliver(Reactor& r, detail::Envelope* e) {
  ASSERT_NE(e, nullptr);
  r.on_message(detail::MessageAccess::of(*e));
  detail::free_envelope(e);
}

TEST(Messaging, ATypeUnderAnotherTypesMessageNameIsRefusedAtSend) {
  Runtime rt(RuntimeConfig{.workers = 1});
  Probe probe;
  const ActorRef greetings = rt.spawn<DecodeErrors>(&probe);  // Greeting owns its id from here
  EXPECT_EQ(rt.send(greetings, Impostor{7, 2.5}), SendResult::kTypeClash);
  using namespace raw_mismatch;
  const ActorRef pairs = rt.spawn<PairSink>(&probe);
  EXPECT_EQ(rt.send(pairs, Short{7}), SendResult::kTypeClash);
  EXPECT_EQ(rt.send(pairs, Packed{2, 3}), SendResult::kTypeClash);
  ASSERT_EQ(rt.send(pairs, Pair{2, 3}), SendResult::kOk);  // the owner still goes through
  ASSERT_TRUE(probe.wait_for(1));
  EXPECT_EQ(probe.value(), 1005u);
  EXPECT_EQ(rt.stats(pairs).decode_errors, 0u);
}

TEST(Messaging, AMsgpackValueOfTheWrongShapeIsAnErrorEventNotACrash) {
  Probe probe;
  DecodeErrors r(&probe);
  deliver(r, forge<Greeting>(Impostor{7, 2.5}));
  ASSERT_TRUE(probe.wait_for(1));
  EXPECT_EQ(probe.value(), 1u);
  Greeting g{"hi", {1}, {{"e", 2.7}}};
  deliver(r, forge<Greeting>(g));  // the right shape still arrives
  ASSERT_TRUE(probe.wait_for(2));
  EXPECT_EQ(probe.value(), 100u);
}

TEST(Messaging, ARawPayloadOfTheWrongSizeOrEncodingIsAnErrorEventNotACrash) {
  using namespace raw_mismatch;
  Probe probe;
  PairSink r(&probe);
  deliver(r, forge<Pair>(Short{7}));
  ASSERT_TRUE(probe.wait_for(1));
  EXPECT_EQ(probe.value(), 1u);
  deliver(r, forge<Pair>(Packed{2, 3}));
  ASSERT_TRUE(probe.wait_for(2));
  EXPECT_EQ(probe.value(), 1u);
  deliver(r, forge<Pair>(Pair{2, 3}));
  ASSERT_TRUE(probe.wait_for(3));
  EXPECT_EQ(probe.value(), 1005u);
}

TEST(Messaging, SendToAStoppedReactorSaysSo) {
  Runtime rt(RuntimeConfig{.workers = 1});
  Probe probe;
  const ActorRef r = rt.spawn<GreetingSink>(&probe);
  ASSERT_TRUE(rt.stop(r));
  ASSERT_TRUE(rt.wait_stopped(r));
  EXPECT_EQ(rt.send(r, Tagged{1, 2}), SendResult::kNoSuchReactor);
  EXPECT_FALSE(rt.stop(r));
  // A new reactor may reuse the slot, never the reference.
  const ActorRef again = rt.spawn<GreetingSink>(&probe);
  EXPECT_NE(again, r);
  EXPECT_EQ(rt.send(r, Tagged{1, 2}), SendResult::kNoSuchReactor);
}

class SenderEcho : public Reactor {
 public:
  explicit SenderEcho(Probe* probe) : probe_(probe) { handle<&SenderEcho::on_tagged>(); }
  // The message carries the sender's own reference: its high and low 32 bits.
  void on_tagged(const Tagged& t) {
    const ActorRef claimed((std::uint64_t{t.sender} << 32) | t.seq);
    probe_->done(sender() == claimed ? 1 : 2);
  }

 private:
  Probe* probe_;
};

class SendsItsRef : public Reactor {
 public:
  explicit SendsItsRef(ActorRef to) : to_(to) {}
  void on_start() override {
    send(to_, Tagged{static_cast<std::uint32_t>(self().value() >> 32), static_cast<std::uint32_t>(self().value())});
  }

 private:
  ActorRef to_;
};

TEST(Messaging, TypedHandlersSeeTheSenderAndOutsideSendsHaveNone) {
  Runtime rt(RuntimeConfig{.workers = 2});
  Probe probe;
  const ActorRef echo = rt.spawn<SenderEcho>(&probe);
  ASSERT_EQ(rt.send(echo, Tagged{0, 0}), SendResult::kOk);  // from outside: sender is null
  ASSERT_TRUE(probe.wait_for(1));
  EXPECT_EQ(probe.value(), 1u);
  const ActorRef from = rt.spawn<SendsItsRef>(echo);
  ASSERT_TRUE(from);
  ASSERT_TRUE(probe.wait_for(2));
  EXPECT_EQ(probe.value(), 1u);
}

class ReportsItsCpu : public Reactor {
 public:
  explicit ReportsItsCpu(Probe* probe) : probe_(probe) {}
  void on_start() override {
    cpu_set_t set;
    CPU_ZERO(&set);
    pthread_getaffinity_np(pthread_self(), sizeof set, &set);
    probe_->done(CPU_COUNT(&set) == 1 ? 1 : 2);
  }

 private:
  Probe* probe_;
};

TEST(Messaging, PinnedWorkersRunOnOneCpuEach) {
  Runtime rt(RuntimeConfig{.workers = 2, .pin_workers = true});
  Probe probe;
  SpawnOptions o;
  o.worker = 1;
  rt.spawn<ReportsItsCpu>(o, &probe);
  ASSERT_TRUE(probe.wait_for(1));
  EXPECT_EQ(probe.value(), 1u);
}

}  // namespace
}  // namespace reheap::messaging_test
