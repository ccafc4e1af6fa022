// Runtime::ask: a thread outside the runtime asks a reactor and blocks for its answer.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <msgpack.hpp>

#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap::ask_test {
namespace {
struct Even;
}  // namespace
}  // namespace reheap::ask_test

namespace msgpack {
MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS) {
namespace adaptor {
template <>
struct convert<reheap::ask_test::Even> {
  const msgpack::object& operator()(const msgpack::object& o, reheap::ask_test::Even& v) const;
};
template <>
struct pack<reheap::ask_test::Even> {
  template <class Stream>
  packer<Stream>& operator()(packer<Stream>& p, const reheap::ask_test::Even& v) const;
};
}  // namespace adaptor
}  // MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS)
}  // namespace msgpack

namespace reheap::ask_test {
namespace {

using namespace std::chrono_literals;

struct Lookup {
  std::string key;
  MSGPACK_DEFINE(key)
};
struct Found {
  std::string key;
  std::vector<std::string> values;
  MSGPACK_DEFINE(key, values)
};
struct Later {
  std::uint32_t after_ms;
};
// Held: answered only when the test sends Release, so that an answer comes after the asker gave
// up however slowly the machine runs.
struct Hold {
  std::uint32_t unused;
};
struct Release {
  std::uint32_t unused;
};
struct Chatter {
  std::uint32_t n;
};
struct Count {
  std::uint64_t n;
};
// Encoded with msgpack; its decoder refuses odd numbers, so a reply Even{3} cannot be decoded.
struct Even {
  static constexpr bool reheap_msgpack = true;
  int n;
};
struct SendNotACount {
  std::uint32_t unused;
};
struct AskFromInside {
  std::uint32_t unused;
};

// Keeps a multimap in its heap and answers Lookup at once; Later after a timer and Hold on
// Release, with whatever a send to the asker then says recorded in `late`; chatters before
// answering Count.
class Directory : public Reactor {
 public:
  explicit Directory(std::atomic<int>* late) : late_(late) {
    handle<&Directory::on_lookup>();
    handle<&Directory::on_later>();
    handle<&Directory::on_hold>();
    handle<&Directory::on_release>();
    handle<&Directory::on_count>();
    handle<&Directory::on_send_not_a_count>();
    handle<&Directory::on_ask_from_inside>();
  }
  void on_start() override {
    for (int i = 0; i < 50; ++i) entries_.emplace("k" + std::to_string(i % 5), std::string(40, 'a' + i % 26));
  }
  void on_lookup(const Lookup& l) {
    Found f{l.key, {}};
    auto [first, last] = entries_.equal_range(l.key);
    for (auto it = first; it != last; ++it) f.values.push_back(it->second);
    send(sender(), f);
  }
  void on_later(const Later& l) {
    waiting_ = sender();
    start_timer(std::chrono::milliseconds(l.after_ms));
  }
  void on_timer(TimerId) override { answer_the_waiting(); }
  void on_hold(const Hold&) { waiting_ = sender(); }
  void on_release(const Release&) { answer_the_waiting(); }
  void answer_the_waiting() { late_->store(static_cast<int>(send(waiting_, Count{entries_.size()}))); }
  void on_count(const Count&) {
    send(sender(), Chatter{1});
    send(sender(), Chatter{2});
    send(sender(), Count{entries_.size()});
  }
  void on_send_not_a_count(const SendNotACount&) { send(sender(), Even{3}); }
  void on_ask_from_inside(const AskFromInside&) {
    try {
      runtime().ask<Count>(self(), Count{0}, 10ms);
      late_->store(-1);
    } catch (const std::logic_error& e) {
      late_->store(std::string(e.what()).find("ask") != std::string::npos ? -2 : -3);
    }
  }

 private:
  std::atomic<int>* late_;
  std::multimap<std::string, std::string> entries_;
  ActorRef waiting_;
};

}  // namespace
}  // namespace reheap::ask_test

namespace msgpack {
MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS) {
namespace adaptor {
const msgpack::object& convert<reheap::ask_test::Even>::operator()(
    const msgpack::object& o, reheap::ask_test::Even& v) const {
  v.n = o.as<int>();
  if (v.n % 2 != 0) throw msgpack::type_error();
  return o;
}
template <class Stream>
packer<Stream>& pack<reheap::ask_test::Even>::operator()(packer<Stream>& p,
                                                       const reheap::ask_test::Even& v) const {
  p.pack(v.n);
  return p;
}
}  // namespace adaptor
}  // MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS)
}  // namespace msgpack

namespace reheap::ask_test {
namespace {

TEST(Ask, ReturnsTheReplyDecodedOutsideAnyHeapAndStopsTheAsker) {
  std::atomic<int> late{99};
  Runtime rt(RuntimeConfig{.workers = 2});
  const ActorRef dir = rt.spawn<Directory>(&late);
  const std::size_t before = rt.stats().reactors;

  SendResult sent = SendResult::kNoMemory;
  const std::optional<Found> found = rt.ask<Found>(dir, Lookup{"k3"}, 10s, &sent);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(sent, SendResult::kOk);
  EXPECT_EQ(found->key, "k3");
  ASSERT_EQ(found->values.size(), 10u);
  EXPECT_EQ(found->values[0], std::string(40, 'd'));
  // The reply's memory is the process's, not a heap's: it outlives the asker's heap.
  EXPECT_EQ(Heap::owner_of(found->values[0].data()), nullptr);
  EXPECT_TRUE(rttest::wait_until([&] { return rt.stats().reactors == before; }));
  EXPECT_EQ(rt.stats().dead_letters, 0u);
}

TEST(Ask, WaitsForAnAnswerGivenLaterAndSkipsMessagesOfOtherTypes) {
  std::atomic<int> late{99};
  Runtime rt(RuntimeConfig{.workers = 2});
  const ActorRef dir = rt.spawn<Directory>(&late);
  const std::optional<Count> later = rt.ask<Count>(dir, Later{30}, 10s);
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(later->n, 50u);
  EXPECT_EQ(late.load(), static_cast<int>(SendResult::kOk));
  // Two Chatter messages come first: the asker waits on for the Count.
  const std::optional<Count> count = rt.ask<Count>(dir, Count{0}, 10s);
  ASSERT_TRUE(count.has_value());
  EXPECT_EQ(count->n, 50u);
}

TEST(Ask, GivesUpAfterTheTimeoutAndALaterAnswerIsRefused) {
  std::atomic<int> late{99};
  Runtime rt(RuntimeConfig{.workers = 2});
  const ActorRef dir = rt.spawn<Directory>(&late);
  const std::size_t before = rt.stats().reactors;
  SendResult sent = SendResult::kNoMemory;
  const auto start = std::chrono::steady_clock::now();
  // The answer is held until after ask returned: that it returned at all is the give-up. (How soon
  // after its timeout it returns is the scheduler's business: a loaded machine may take a while.)
  EXPECT_FALSE(rt.ask<Count>(dir, Hold{}, 50ms, &sent).has_value());
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(sent, SendResult::kOk);  // delivered; only the answer was missing
  EXPECT_GE(waited, 50ms);
  ASSERT_EQ(rt.send(dir, Release{}), SendResult::kOk);
  EXPECT_TRUE(rttest::wait_until([&] { return late.load() != 99; }));
  EXPECT_EQ(late.load(), static_cast<int>(SendResult::kNoSuchReactor));
  EXPECT_TRUE(rttest::wait_until([&] { return rt.stats().reactors == before; }));
}

TEST(Ask, ARefusedRequestReturnsAtOnceAndSaysWhy) {
  Runtime rt(RuntimeConfig{.workers = 1});
  std::atomic<int> late{99};
  const ActorRef dir = rt.spawn<Directory>(&late);
  ASSERT_TRUE(rt.stop(dir));
  ASSERT_TRUE(rt.wait_stopped(dir));
  SendResult sent = SendResult::kOk;
  // Far from the timeout, however loaded the machine: the refusal does not wait for it.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(rt.ask<Found>(dir, Lookup{"k1"}, 120s, &sent).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 60s);
  EXPECT_EQ(sent, SendResult::kNoSuchReactor);
  EXPECT_TRUE(rttest::wait_until([&] { return rt.stats().reactors == 0; }));

  rt.shutdown();
  EXPECT_FALSE(rt.ask<Found>(dir, Lookup{"k1"}, 10s, &sent).has_value());
  EXPECT_EQ(sent, SendResult::kShuttingDown);
}

TEST(Ask, AReplyThatDoesNotDecodeThrowsMessageError) {
  std::atomic<int> late{99};
  Runtime rt(RuntimeConfig{.workers = 1});
  const ActorRef dir = rt.spawn<Directory>(&late);
  EXPECT_THROW(rt.ask<Even>(dir, SendNotACount{0}, 10s), MessageError);
  // The runtime goes on, and so does the reactor.
  const std::optional<Found> found = rt.ask<Found>(dir, Lookup{"k0"}, 10s);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->values.size(), 10u);
}

TEST(Ask, OnAWorkerThreadItThrowsLogicError) {
  std::atomic<int> late{99};
  Runtime rt(RuntimeConfig{.workers = 1});
  const ActorRef dir = rt.spawn<Directory>(&late);
  ASSERT_EQ(rt.send(dir, AskFromInside{0}), SendResult::kOk);
  EXPECT_TRUE(rttest::wait_until([&] { return late.load() != 99; }));
  EXPECT_EQ(late.load(), -2);
}

TEST(Ask, ManyThreadsAskAtOnce) {
  std::atomic<int> late{99};
  Runtime rt(RuntimeConfig{.workers = 2});
  const ActorRef dir = rt.spawn<Directory>(&late);
  std::atomic<int> right{0};
  std::vector<std::thread> askers;
  for (int t = 0; t < 4; ++t) {
    askers.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const std::string key = "k" + std::to_string((t + i) % 5);
        const std::optional<Found> f = rt.ask<Found>(dir, Lookup{key}, 20s);
        if (f && f->key == key && f->values.size() == 10u) right.fetch_add(1);
      }
    });
  }
  for (std::thread& t : askers) t.join();
  EXPECT_EQ(right.load(), 200);
  EXPECT_TRUE(rttest::wait_until([&] { return rt.stats().reactors == 1; }));
}

}  // namespace
}  // namespace reheap::ask_test
