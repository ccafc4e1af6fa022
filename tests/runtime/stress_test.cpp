// Cross-thread stress (the ThreadSanitizer target): many reactors on two workers hop raw and
// msgpack messages to random peers while outside threads send to them, and reactors are spawned
// (from outside and from inside reactors) and stopped all the while. The books must balance:
// every message a send accepted was handled or counted as a dead letter.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap {
namespace {

struct Books {
  std::atomic<std::uint64_t> accepted{0};  // sends that returned kOk
  std::atomic<std::uint64_t> refused{0};   // sends that returned anything else
  std::atomic<std::uint64_t> handled{0};
  std::atomic<std::uint64_t> handled_raw{0};
  std::atomic<std::uint64_t> handled_msgpack{0};
  std::atomic<std::uint64_t> spawned_inside{0};

  void count(SendResult r) {
    (r == SendResult::kOk ? accepted : refused).fetch_add(1, std::memory_order_relaxed);
  }
};

// The current population, which reactors and threads pick peers from (test memory).
class Registry {
 public:
  explicit Registry(std::size_t slots) : refs_(slots) {}
  ActorRef pick(std::uint64_t random) {
    std::lock_guard lock(mutex_);
    return refs_[random % refs_.size()];
  }
  ActorRef replace(std::uint64_t random, ActorRef with) {
    std::lock_guard lock(mutex_);
    ActorRef& slot = refs_[random % refs_.size()];
    const ActorRef old = slot;
    slot = with;
    return old;
  }
  void set(std::size_t i, ActorRef r) {
    std::lock_guard lock(mutex_);
    refs_[i] = r;
  }

 private:
  std::mutex mutex_;
  std::vector<ActorRef> refs_;
};

struct Hop {
  std::uint32_t ttl;
  std::uint32_t seq;
};
struct PackedHop {
  std::uint32_t ttl;
  std::string text;
  std::vector<std::uint32_t> numbers;
  MSGPACK_DEFINE(ttl, text, numbers)
};
struct Quit {
  std::uint32_t unused;
};

std::uint64_t next_random(std::uint64_t& state) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

class Node : public Reactor {
 public:
  Node(Books* books, Registry* registry, std::uint64_t seed)
      : books_(books), registry_(registry), random_(seed | 1) {
    handle<&Node::on_hop>();
    handle<&Node::on_packed>();
    handle<&Node::on_quit>();
  }
  void on_hop(const Hop& h) {
    books_->handled_raw.fetch_add(1, std::memory_order_relaxed);
    arrived(h.ttl, h.seq);
  }
  void on_packed(const PackedHop& h) {
    books_->handled_msgpack.fetch_add(1, std::memory_order_relaxed);
    if (h.numbers.size() != h.text.size()) std::abort();  // decoded into garbage
    history_.push_back(h.text);
    if (history_.size() > 16) history_.erase(history_.begin());
    arrived(h.ttl, static_cast<std::uint32_t>(h.numbers.size()));
  }
  void on_quit(const Quit&) {
    books_->handled.fetch_add(1, std::memory_order_relaxed);
    stop();
  }

 private:
  void arrived(std::uint32_t ttl, std::uint32_t seq) {
    books_->handled.fetch_add(1, std::memory_order_relaxed);
    if (ttl == 0) return;
    const ActorRef to = registry_->pick(next_random(random_));
    if (seq % 2 == 0) {
      books_->count(send(to, Hop{ttl - 1, seq + 1}));
    } else {
      const std::size_t n = seq % 23;
      books_->count(
          send(to, PackedHop{ttl - 1, std::string(n, 'p'), std::vector<std::uint32_t>(n, seq)}));
    }
    // Now and then a reactor spawns a short-lived one and tells it to quit at once.
    if (next_random(random_) % 512 == 0) {
      const ActorRef child = runtime().spawn<Node>(books_, registry_, next_random(random_));
      books_->spawned_inside.fetch_add(1, std::memory_order_relaxed);
      books_->count(send(child, Quit{}));
    }
  }

  Books* books_;
  Registry* registry_;
  std::uint64_t random_;
  std::vector<std::string> history_;
};

TEST(Stress, ReactorsAndThreadsMessagingWhileReactorsComeAndGoKeepTheBooksBalanced) {
  constexpr std::size_t kNodes = 48;
  constexpr std::uint32_t kOutsideSends = rttest::kSanitized ? 4'000 : 40'000;
  constexpr int kChurn = rttest::kSanitized ? 200 : 2'000;
  Books books;
  Registry registry(kNodes);
  Runtime rt(RuntimeConfig{.workers = 2});
  for (std::size_t i = 0; i < kNodes; ++i)
    registry.set(i, rt.spawn<Node>(&books, &registry, i + 1));

  std::vector<std::thread> threads;
  for (std::uint64_t t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      std::uint64_t random = 0x9E3779B97F4A7C15ull + t;
      for (std::uint32_t i = 0; i < kOutsideSends; ++i) {
        const ActorRef to = registry.pick(next_random(random));
        if (i % 3 == 0) {
          books.count(rt.send(to, PackedHop{6, "outside", {1, 2, 3, 4, 5, 6, 7}}));
        } else {
          books.count(rt.send(to, Hop{6, i}));
        }
      }
    });
  }
  threads.emplace_back([&] {  // churn: a new node takes a random slot, the old one quits
    std::uint64_t random = 12345;
    for (int i = 0; i < kChurn; ++i) {
      const ActorRef fresh = rt.spawn<Node>(&books, &registry, next_random(random));
      const ActorRef old = registry.replace(next_random(random), fresh);
      books.count(rt.send(old, Quit{}));
    }
  });
  for (auto& t : threads) t.join();
  // Every hop chain ends (ttl), so the runtime goes idle.
  ASSERT_TRUE(rt.wait_idle(std::chrono::seconds(60))) << rt.stats().messages_in_flight;
  const RuntimeStats before = rt.stats();
  EXPECT_EQ(before.messages_in_flight, 0u);
  EXPECT_EQ(before.failures, 0u);
  EXPECT_EQ(before.reactors, kNodes) << "every quit reactor is gone, every live one counted";
  rt.shutdown();
  const RuntimeStats after = rt.stats();
  EXPECT_EQ(books.handled.load() + after.dead_letters, books.accepted.load())
      << "handled " << books.handled.load() << ", dead letters " << after.dead_letters
      << ", accepted " << books.accepted.load() << ", refused " << books.refused.load();
  EXPECT_GT(books.handled_raw.load(), 0u);
  EXPECT_GT(books.handled_msgpack.load(), 0u);
  EXPECT_GT(books.spawned_inside.load(), 0u);
}

}  // namespace
}  // namespace reheap
