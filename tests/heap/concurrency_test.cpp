// The zone is the one part of heap/ shared between threads: heaps are created and destroyed from
// any thread, and every thread's operator delete reads the owner map. These tests run in every
// preset; under the tsan preset they are the heap's data-race check.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/zone.h"

namespace {

TEST(Concurrency, ThreadsCreateUseAndDestroyTheirOwnHeapsConcurrently) {
  const std::size_t heaps_before = reheap::Zone::stats().live_heaps;
  constexpr int kThreads = 4;
  constexpr int kRounds = 200;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      for (int round = 0; round < kRounds; ++round) {
        reheap::HeapPtr heap = reheap::Heap::create();
        reheap::HeapScope scope(*heap);
        std::vector<std::string> words;
        for (int i = 0; i < 50; ++i) words.push_back(std::string(20 + i, static_cast<char>('a' + t)));
        auto* big = new char[200000];
        big[0] = 'x';
        for (const std::string& w : words) {
          if (reheap::Heap::owner_of(w.data()) != heap.get()) failures.fetch_add(1);
        }
        if (reheap::Heap::owner_of(big) != heap.get()) failures.fetch_add(1);
        delete[] big;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(reheap::Zone::stats().live_heaps, heaps_before);
}

TEST(Concurrency, ACurrentHeapIsPerThread) {
  reheap::HeapPtr heap = reheap::Heap::create();
  reheap::HeapScope scope(*heap);
  reheap::Heap* seen_by_other_thread = heap.get();
  void* allocated_by_other_thread = nullptr;
  auto body = [&] {
    seen_by_other_thread = reheap::current_heap();
    allocated_by_other_thread = new int(7);  // system allocator: no heap is current there
  };
  std::optional<std::thread> other;
  {
    // std::thread allocates its state with `new` here and frees it on the new thread, so it must
    // not be created while a heap is current (see docs/heap.md, "Rules").
    reheap::HeapScope none(nullptr);
    other.emplace(body);
  }
  other->join();
  EXPECT_EQ(seen_by_other_thread, nullptr);
  EXPECT_EQ(reheap::Heap::owner_of(allocated_by_other_thread), nullptr);
  {
    reheap::HeapScope none(nullptr);
    delete static_cast<int*>(allocated_by_other_thread);
  }
  EXPECT_EQ(reheap::current_heap(), heap.get());
}

TEST(Concurrency, AHeapMayMoveBetweenThreadsWhenUsedByOneAtATime) {
  reheap::HeapPtr heap = reheap::Heap::create();
  std::vector<int>* numbers = nullptr;
  std::thread first([&] {
    reheap::HeapScope scope(*heap);
    numbers = new std::vector<int>(1000, 1);
  });
  first.join();
  std::thread second([&] {
    reheap::HeapScope scope(*heap);
    numbers->resize(100000, 2);
    delete numbers;
  });
  second.join();
  EXPECT_EQ(heap->stats().live_blocks, 0u);
}

}  // namespace
