// MessageAllocator across threads: blocks allocated by one thread and freed by another, many
// producers and consumers at once (under the tsan preset these are the data-race check), thread
// exit with blocks still live elsewhere, and memory that stays flat over repeated cycles.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <iterator>
#include <optional>
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

// Every slab the arena ever handed out is owned, cached or released: their sum grows only when a
// slab comes from the arena's untouched range, i.e. while the traffic needs more memory than it
// ever did.
std::size_t slabs_ever_used(const MessageAllocatorStats& s) {
  return s.slabs + s.cached_slabs + s.released_slabs;
}

TEST(MessageAllocatorThreads, BlocksFreedByAnotherThreadGoBackToTheAllocatingThread) {
  // A freed block goes back to the pool that owns its *slab*, which is the allocating thread's
  // only if that thread carved it from its own slabs. A thread's cache also holds blocks it freed
  // that other threads allocated (earlier tests leave such blocks in this thread's cache), and
  // those go back to their own slabs' pools. So the cache is given back first: then every block
  // below comes from a slab of this thread's pool.
  MessageAllocator::trim();
  constexpr int kBlocks = 10'000;
  std::vector<void*> blocks;
  for (int i = 0; i < kBlocks; ++i) blocks.push_back(MessageAllocator::allocate(64));
  MessageAllocator::trim();
  const MessageAllocatorStats before = MessageAllocator::stats();
  std::thread([&blocks] {
    for (void* p : blocks) MessageAllocator::deallocate(p);
  }).join();
  // Allocating as many again takes the blocks the other thread freed: no new memory, and no slab
  // from the arena's untouched range.
  for (int i = 0; i < kBlocks; ++i) blocks[i] = MessageAllocator::allocate(64);
  const MessageAllocatorStats again = MessageAllocator::stats();
  EXPECT_LE(again.bytes_mapped, before.bytes_mapped);
  EXPECT_EQ(slabs_ever_used(again), slabs_ever_used(before));
  // The refills above took only the lists they needed; statistics are exact once the allocating
  // thread trims (the other one has exited): every free was given back to this thread's slabs.
  MessageAllocator::trim();
  EXPECT_GE(MessageAllocator::stats().remote_frees, before.remote_frees + kBlocks);
  for (void* p : blocks) MessageAllocator::deallocate(p);
}

TEST(MessageAllocatorThreads, ASlabTaggedFullAgainIsHandedBackAgainInOrder) {
  // One slab's life between its owner A and another thread B. A uses the slab up (it is tagged
  // full) and passes all its blocks to B. B frees four, which hands the slab back to A through
  // A's pool's `returned` list; A takes it back (reading the slab's `returned` link), uses those
  // four up and tags it full again. Then B frees blocks it has held since before all that, which
  // hands the slab back a second time and writes the link again. Nothing orders A's last steps
  // before B's but the slab itself (B waits on a relaxed flag), so tagging a slab full must
  // publish what the owner did with it to the thread that replaces the tag; under the tsan
  // preset a missing order is reported as a data race on the link.
  constexpr std::size_t kSize = MessageAllocator::kMaxClassSize;
  constexpr std::size_t kPerSlab = 7;  // (256 KiB - the slab header) / 32 KiB
  const auto slab_of = [](const void* p) {
    return reinterpret_cast<std::uintptr_t>(p) & ~(std::uintptr_t{256 * 1024} - 1);
  };
  BlockingQueue<std::vector<void*>> to_b;
  BlockingQueue<int> to_a;
  std::atomic<bool> tagged_again{false};  // relaxed only: it orders nothing

  std::thread b([&] {
    // B's own blocks, allocated now: a refill may take the arena's lock, which A takes too, and
    // that would order A's steps before B's.
    void* own[2] = {MessageAllocator::allocate(kSize), MessageAllocator::allocate(kSize)};
    std::optional<std::vector<void*>> blocks = to_b.pop();
    if (blocks && blocks->size() == kPerSlab) {
      // B's cache keeps 4 blocks of this class: the fifth free gives the first four back, as one
      // run, onto the full slab, which hands it back to A.
      for (std::size_t i = 0; i < 5; ++i) MessageAllocator::deallocate((*blocks)[i]);
      to_a.push(1);
      while (!tagged_again.load(std::memory_order_relaxed)) std::this_thread::yield();
      // Blocks 5 and 6 fill the cache with block 4 and own[0]; own[1] gives those four back:
      // blocks 6, 5 and 4 as one run onto the slab, tagged full again: the second hand-back.
      MessageAllocator::deallocate((*blocks)[5]);
      MessageAllocator::deallocate((*blocks)[6]);
    }
    MessageAllocator::deallocate(own[0]);
    MessageAllocator::deallocate(own[1]);
    to_a.push(2);
  });

  std::vector<void*> mine;
  // Takes blocks until `n` of them come from `slab`; how many that took.
  const auto take_from = [&](std::uintptr_t slab, int n) {
    int taken = 0;
    for (int i = 0; i < 64 && n > 0; ++i, ++taken) {
      mine.push_back(MessageAllocator::allocate(kSize));
      if (slab_of(mine.back()) == slab) --n;
    }
    return n == 0 ? taken : -1;
  };
  std::thread a([&] {
    for (std::size_t i = 0; i < 8 * kPerSlab + 1; ++i) {
      mine.push_back(MessageAllocator::allocate(kSize));
    }
    // A slab all of whose blocks A holds, and which A moved on from: tagged full.
    std::uintptr_t full = 0;
    for (void* p : mine) {
      const std::uintptr_t s = slab_of(p);
      if (s != slab_of(mine.back()) &&
          std::count_if(mine.begin(), mine.end(), [&](void* q) { return slab_of(q) == s; }) ==
              static_cast<std::ptrdiff_t>(kPerSlab)) {
        full = s;
        break;
      }
    }
    std::vector<void*> blocks;
    if (full != 0) {
      std::copy_if(mine.begin(), mine.end(), std::back_inserter(blocks),
                   [&](void* p) { return slab_of(p) == full; });
      std::erase_if(mine, [&](void* p) { return slab_of(p) == full; });
    }
    to_b.push(blocks);
    if (full == 0) {
      ADD_FAILURE() << "no slab of " << kPerSlab << " blocks was used up";
      tagged_again.store(true, std::memory_order_relaxed);
      to_a.pop();
      return;
    }
    to_a.pop();  // B gave four blocks back: the slab is on A's `returned` list
    // A's refills reach the slab once the current one is used up; after its four blocks the next
    // refill finds it empty and tags it full again.
    EXPECT_GT(take_from(full, 4), 0) << "the slab was not handed back";
    mine.push_back(MessageAllocator::allocate(kSize));
    tagged_again.store(true, std::memory_order_relaxed);
    to_a.pop();
    EXPECT_GT(take_from(full, 3), 0) << "the slab was not handed back a second time";
  });
  a.join();
  b.join();
  for (void* p : mine) MessageAllocator::deallocate(p);
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
