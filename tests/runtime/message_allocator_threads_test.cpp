// MessageAllocator across threads: blocks allocated by one thread and freed by another, many
// producers and consumers at once (under the tsan preset these are the data-race check), thread
// exit with blocks still live elsewhere, and memory that stays flat over repeated cycles.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "message_test_support.h"
#include "reheap/message_allocator.h"

namespace reheap {
namespace {

using test::BlockingQueue;
using test::has_pattern;
using test::make_message;
using test::Sent;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int kScale = 1;  // sanitizers are 5-20x slower
#else
constexpr int kScale = 4;
#endif

// Sizes like a message mix: mostly small, some up to 2 KiB, now and then a large block.
std::size_t message_size(std::uint64_t i) {
  if (i % 997 == 0) return 40'000 + i % 5000;
  if (i % 13 == 0) return 512 + (i * 131) % 1536;
  return 16 + (i * 37) % 240;
}

TEST(MessageAllocatorThreads, BlocksFreedByAnotherThreadGoBackToTheAllocatingThread) {
  constexpr int kBlocks = 10'000;
  std::vector<void*> blocks;
  for (int i = 0; i < kBlocks; ++i) blocks.push_back(MessageAllocator::allocate(64));
  MessageAllocator::trim();
  const MessageAllocatorStats before = MessageAllocator::stats();
  std::thread([&blocks] {
    for (void* p : blocks) MessageAllocator::deallocate(p);
  }).join();
  // Allocating as many again takes the blocks the other thread freed: no new slab.
  for (int i = 0; i < kBlocks; ++i) blocks[i] = MessageAllocator::allocate(64);
  EXPECT_EQ(MessageAllocator::stats().bytes_mapped, before.bytes_mapped);
  EXPECT_GE(MessageAllocator::stats().remote_frees, before.remote_frees + kBlocks);
  for (void* p : blocks) MessageAllocator::deallocate(p);
}

TEST(MessageAllocatorThreads, ManyProducersOneConsumer) {
  constexpr int kProducers = 4;
  const int per_producer = 5'000 * kScale;
  BlockingQueue<Sent> queue;
  std::atomic<int> failed_allocations{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < kProducers; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < per_producer; ++i) {
        const std::uint64_t seed = std::uint64_t(t) << 32 | std::uint64_t(i);
        Sent m = make_message(message_size(seed), seed);
        if (m.block == nullptr) {
          failed_allocations.fetch_add(1);
          continue;
        }
        queue.push(m);
      }
    });
  }
  int received = 0;
  int corrupted = 0;
  std::thread consumer([&] {
    while (std::optional<Sent> m = queue.pop()) {
      if (!has_pattern(m->block, m->size, m->seed)) ++corrupted;
      MessageAllocator::deallocate(m->block);
      ++received;
    }
  });
  for (std::thread& p : producers) p.join();
  queue.close();
  consumer.join();
  EXPECT_EQ(failed_allocations.load(), 0);
  EXPECT_EQ(received, kProducers * per_producer);
  EXPECT_EQ(corrupted, 0);
}

TEST(MessageAllocatorThreads, OneProducerManyConsumers) {
  constexpr int kConsumers = 4;
  const int total = 20'000 * kScale;
  BlockingQueue<Sent> queue;
  std::atomic<int> received{0};
  std::atomic<int> corrupted{0};
  std::vector<std::thread> consumers;
  for (int t = 0; t < kConsumers; ++t) {
    consumers.emplace_back([&] {
      while (std::optional<Sent> m = queue.pop()) {
        if (!has_pattern(m->block, m->size, m->seed)) corrupted.fetch_add(1);
        MessageAllocator::deallocate(m->block);
        received.fetch_add(1);
      }
    });
  }
  std::thread producer([&] {
    for (int i = 0; i < total; ++i) queue.push(make_message(message_size(std::uint64_t(i)), i));
  });
  producer.join();
  queue.close();
  for (std::thread& c : consumers) c.join();
  EXPECT_EQ(received.load(), total);
  EXPECT_EQ(corrupted.load(), 0);
}

TEST(MessageAllocatorThreads, PingPongEachThreadFreesWhatTheOtherAllocated) {
  const int rounds = 20'000 * kScale;
  BlockingQueue<Sent> to_b;
  BlockingQueue<Sent> to_a;
  int corrupted_a = 0;
  int corrupted_b = 0;
  std::thread b([&] {
    while (std::optional<Sent> m = to_b.pop()) {
      if (!has_pattern(m->block, m->size, m->seed)) ++corrupted_b;
      const std::uint64_t reply_seed = m->seed + 1;
      MessageAllocator::deallocate(m->block);
      to_a.push(make_message(message_size(reply_seed), reply_seed));
    }
    to_a.close();
  });
  for (int i = 0; i < rounds; ++i) {
    to_b.push(make_message(message_size(std::uint64_t(i) * 2), std::uint64_t(i) * 2));
    std::optional<Sent> reply = to_a.pop();
    ASSERT_TRUE(reply.has_value());
    if (!has_pattern(reply->block, reply->size, reply->seed)) ++corrupted_a;
    MessageAllocator::deallocate(reply->block);
  }
  to_b.close();
  b.join();
  EXPECT_EQ(corrupted_a, 0);
  EXPECT_EQ(corrupted_b, 0);
}

TEST(MessageAllocatorThreads, ARingOfThreadsForwardsAndReusesEachOthersBlocks) {
  // Each thread receives from its left neighbour and sends to its right one: it forwards some
  // messages unchanged (so a block travels through several threads before it is freed), frees
  // the others and sends a new message of its own instead. Blocks end up cached and reused by
  // threads that neither allocated them nor own their slabs.
  constexpr int kThreads = 4;
  const int per_thread = 5'000 * kScale;
  std::vector<BlockingQueue<Sent>> queues(kThreads);
  std::atomic<int> corrupted{0};
  std::atomic<int> done_sending{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      BlockingQueue<Sent>& in = queues[t];
      BlockingQueue<Sent>& out = queues[(t + 1) % kThreads];
      for (int i = 0; i < per_thread; ++i) {
        const std::uint64_t seed = std::uint64_t(t) << 32 | std::uint64_t(i);
        out.push(make_message(message_size(seed), seed));
        if (i % 4 != 3) continue;
        // Every fourth step, drain what arrived: forward odd seeds, free the rest.
        for (int k = 0; k < 4; ++k) {
          std::optional<Sent> m = in.pop();
          if (!m) break;
          if (!has_pattern(m->block, m->size, m->seed)) corrupted.fetch_add(1);
          if (m->seed % 2 == 1 && m->seed % 7 != 0) {
            // seed + 6 stays odd and reaches a multiple of 7 within 7 hops.
            test::fill_pattern(m->block, m->size, m->seed + 6);
            out.push(Sent{m->block, m->size, m->seed + 6});
          } else {
            MessageAllocator::deallocate(m->block);
          }
        }
      }
      if (done_sending.fetch_add(1) + 1 == kThreads) {
        for (BlockingQueue<Sent>& q : queues) q.close();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (BlockingQueue<Sent>& q : queues) {
    while (std::optional<Sent> m = q.pop()) {
      if (!has_pattern(m->block, m->size, m->seed)) corrupted.fetch_add(1);
      MessageAllocator::deallocate(m->block);
    }
  }
  EXPECT_EQ(corrupted.load(), 0);
}

TEST(MessageAllocatorThreads, AnExitedThreadsBlocksStayValidAndANewThreadAdoptsItsSlabs) {
  MessageAllocator::deallocate(MessageAllocator::allocate(1));  // this thread has its pool now
  MessageAllocator::trim();
  const MessageAllocatorStats before = MessageAllocator::stats();
  std::vector<Sent> left_behind;
  std::thread([&left_behind] {
    for (std::uint64_t i = 0; i < 20'000; ++i) left_behind.push_back(make_message(64 + i % 300, i));
  }).join();
  const MessageAllocatorStats orphaned = MessageAllocator::stats();
  // The thread adopted an orphan if there was one, and left its pool orphaned at exit.
  EXPECT_EQ(orphaned.orphaned_pools, std::max<std::size_t>(before.orphaned_pools, 1));
  EXPECT_GT(orphaned.slabs, before.slabs);

  // Half the blocks are freed by this thread while their pool has no thread.
  std::size_t corrupted = 0;
  for (std::size_t i = 0; i < left_behind.size() / 2; ++i) {
    if (!has_pattern(left_behind[i].block, left_behind[i].size, left_behind[i].seed)) ++corrupted;
    MessageAllocator::deallocate(left_behind[i].block);
  }
  // A new thread adopts the orphaned pool (the most recent orphan), with its slabs, and frees
  // the other half: into its own slabs now.
  std::thread([&] {
    void* p = MessageAllocator::allocate(64);
    MessageAllocator::deallocate(p);
    for (std::size_t i = left_behind.size() / 2; i < left_behind.size(); ++i) {
      if (!has_pattern(left_behind[i].block, left_behind[i].size, left_behind[i].seed)) ++corrupted;
      MessageAllocator::deallocate(left_behind[i].block);
    }
  }).join();
  EXPECT_EQ(corrupted, 0u);
  const MessageAllocatorStats adopted = MessageAllocator::stats();
  EXPECT_GE(adopted.orphaned_slabs_adopted, before.orphaned_slabs_adopted + orphaned.slabs - before.slabs);
  EXPECT_EQ(adopted.pools, orphaned.pools) << "the pool was reused, not a new one made";

  // All its blocks are free: trim() gives the orphan's slabs back.
  MessageAllocator::trim();
  const MessageAllocatorStats after = MessageAllocator::stats();
  EXPECT_EQ(after.slabs, before.slabs);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_LE(after.bytes_mapped, before.bytes_mapped);
}

TEST(MessageAllocatorThreads, ThreadLocalDestructorsMayStillAllocateAndFree) {
  struct AtThreadExit {
    void* kept = nullptr;
    BlockingQueue<Sent>* out = nullptr;
    ~AtThreadExit() {
      MessageAllocator::deallocate(kept);
      out->push(make_message(3000, 77));  // allocated while the thread is exiting
    }
  };
  BlockingQueue<Sent> out;
  std::thread([&out] {
    thread_local AtThreadExit at_exit;
    at_exit.kept = MessageAllocator::allocate(100);
    at_exit.out = &out;
  }).join();
  out.close();
  std::optional<Sent> m = out.pop();
  ASSERT_TRUE(m.has_value());
  ASSERT_NE(m->block, nullptr);
  EXPECT_TRUE(has_pattern(m->block, m->size, m->seed));
  MessageAllocator::deallocate(m->block);
}

// Every slab the arena ever handed out is owned, cached or released: their sum only grows, and
// it grows only while the traffic needs more memory than it ever did.
std::size_t slabs_ever_used(const MessageAllocatorStats& s) {
  return s.slabs + s.cached_slabs + s.released_slabs;
}

TEST(MessageAllocatorThreads, RepeatedProducerConsumerCyclesDoNotGrowMemory) {
  // Each cycle, fresh threads adopt the pools the previous ones left orphaned and move about
  // 3 MB through a queue. How far the consumer lags when the producer exits varies from cycle
  // to cycle, so the memory in use at the end of a cycle does too; but a leak of one cycle's
  // messages would add about a dozen slabs per cycle.
  MessageAllocator::trim();
  const std::size_t slabs_before = MessageAllocator::stats().slabs;
  const int cycles = 10 * kScale;
  std::size_t after_warmup = 0;
  for (int cycle = 0; cycle < cycles; ++cycle) {
    BlockingQueue<Sent> queue;
    std::thread consumer([&queue] {
      while (std::optional<Sent> m = queue.pop()) MessageAllocator::deallocate(m->block);
    });
    std::thread producer([&queue] {
      for (std::uint64_t i = 0; i < 20'000; ++i) queue.push(make_message(message_size(i), i));
    });
    producer.join();
    queue.close();
    consumer.join();
    if (cycle == 2) after_warmup = slabs_ever_used(MessageAllocator::stats());
  }
  const MessageAllocatorStats end = MessageAllocator::stats();
  EXPECT_LT(slabs_ever_used(end), 2 * after_warmup);
  // Every message was freed, so trim() gives every slab of the exited threads back.
  MessageAllocator::trim();
  EXPECT_EQ(MessageAllocator::stats().cached_slabs, 0u);
  EXPECT_LE(MessageAllocator::stats().slabs, slabs_before);
}

}  // namespace
}  // namespace reheap
