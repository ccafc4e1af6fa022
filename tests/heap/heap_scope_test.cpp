// The current heap and global new/delete: inside a HeapScope plain `new` and the std containers
// allocate in that heap; `delete` routes every block by its address (to its heap if it lies in the
// zone, to the system allocator otherwise); scopes nest and restore; each thread has its own
// current heap.
//
// Checks made inside a scope record plain values and are asserted after the scope ends, so that
// nothing GoogleTest allocates lands in (or is freed from) a heap.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/zone.h"

namespace reheap {
namespace {

// Counts the addresses seen and those not owned by `heap`, without allocating.
struct OwnershipTally {
  explicit OwnershipTally(const Heap* h) : heap(h) {}
  void note(const void* p) {
    ++seen;
    if (Heap::owner_of(p) != heap) ++foreign;
  }
  const Heap* heap;
  std::size_t seen = 0;
  std::size_t foreign = 0;
};

std::string long_key(int i) { return "a key long enough to need a buffer, #" + std::to_string(i); }

TEST(HeapScope, MakesTheHeapCurrentAndRestoresThePreviousOneWhenItEnds) {
  HeapPtr a = Heap::create();
  HeapPtr b = Heap::create();
  EXPECT_EQ(current_heap(), nullptr);
  Heap* seen[5] = {};
  {
    HeapScope outer(*a);
    seen[0] = current_heap();
    {
      HeapScope inner(b.get());
      seen[1] = current_heap();
      {
        HeapScope system(nullptr);
        seen[2] = current_heap();
      }
      seen[3] = current_heap();
    }
    seen[4] = current_heap();
  }
  EXPECT_EQ(seen[0], a.get());
  EXPECT_EQ(seen[1], b.get());
  EXPECT_EQ(seen[2], nullptr);
  EXPECT_EQ(seen[3], b.get());
  EXPECT_EQ(seen[4], a.get());
  EXPECT_EQ(current_heap(), nullptr);
}

TEST(HeapScope, StdContainersBuiltInsideAScopeLiveEntirelyInTheHeap) {
  HeapPtr heap = Heap::create();
  OwnershipTally tally(heap.get());
  bool contents_correct = true;
  std::size_t allocations_held = 0;
  std::size_t live_blocks_with_containers = 0;
  std::size_t live_blocks_after_containers = 0;
  {
    HeapScope scope(*heap);
    {
      std::string text(300, 't');
      std::vector<int> numbers;
      for (int i = 0; i < 5000; ++i) numbers.push_back(i);
      std::unordered_map<std::string, std::vector<int>> table;
      for (int i = 0; i < 500; ++i) table[long_key(i)].assign(static_cast<std::size_t>(i % 7 + 1), i);
      std::map<int, std::string> tree;
      for (int i = 0; i < 400; ++i) tree.emplace(i, std::string(40 + i % 30, 'm'));
      std::list<int> chain;
      for (int i = 0; i < 300; ++i) chain.push_back(i);

      tally.note(text.data());
      tally.note(numbers.data());
      for (const auto& [key, values] : table) {
        tally.note(&key);  // the node
        tally.note(key.data());
        tally.note(values.data());
        if (values.empty()) contents_correct = false;
      }
      for (const auto& [key, value] : tree) {
        tally.note(&value);  // the node
        tally.note(value.data());
        if (value.size() != static_cast<std::size_t>(40 + key % 30)) contents_correct = false;
      }
      for (const int& element : chain) tally.note(&element);

      for (int i = 0; i < 5000; ++i) {
        if (numbers[static_cast<std::size_t>(i)] != i) contents_correct = false;
      }
      for (int i = 0; i < 500; ++i) {
        const std::vector<int>& values = table.at(long_key(i));
        if (values.size() != static_cast<std::size_t>(i % 7 + 1) || values.front() != i) {
          contents_correct = false;
        }
      }
      if (text != std::string(300, 't')) contents_correct = false;
      int expected = 0;
      for (int element : chain) contents_correct = contents_correct && element == expected++;

      // One block each for the string and the vector, three per table entry (node, key, values)
      // and one bucket array, two per tree entry (node, string), one per list node.
      allocations_held = 2 + 3 * table.size() + 1 + 2 * tree.size() + chain.size();
      live_blocks_with_containers = heap->stats().live_blocks;
    }
    live_blocks_after_containers = heap->stats().live_blocks;
  }
  EXPECT_TRUE(contents_correct);
  EXPECT_EQ(tally.seen, 2u + 3 * 500 + 2 * 400 + 300);
  EXPECT_EQ(tally.foreign, 0u) << "container memory outside the heap";
  EXPECT_EQ(live_blocks_with_containers, allocations_held);
  EXPECT_EQ(live_blocks_after_containers, 0u) << "the containers gave every block back";
}

TEST(HeapScope, EveryFormOfNewAllocatesInTheCurrentHeap) {
  struct alignas(256) Wide {
    unsigned char bytes[256];
  };
  HeapPtr heap = Heap::create();
  OwnershipTally tally(heap.get());
  bool aligned = true;
  std::size_t live_blocks_with_objects = 0;
  {
    HeapScope scope(*heap);
    int* single = new int(1);
    int* array = new int[100]();
    int* nothrow_single = new (std::nothrow) int(2);
    int* nothrow_array = new (std::nothrow) int[100]();
    Wide* wide = new Wide();
    Wide* wide_array = new Wide[3]();
    Wide* nothrow_wide = new (std::nothrow) Wide();
    void* raw = ::operator new(1000);
    void* raw_aligned = ::operator new(1000, std::align_val_t{4096});
    for (const void* p : {static_cast<const void*>(single), static_cast<const void*>(array),
                          static_cast<const void*>(nothrow_single),
                          static_cast<const void*>(nothrow_array),
                          static_cast<const void*>(wide), static_cast<const void*>(wide_array),
                          static_cast<const void*>(nothrow_wide), static_cast<const void*>(raw),
                          static_cast<const void*>(raw_aligned)}) {
      tally.note(p);
    }
    aligned = reinterpret_cast<std::uintptr_t>(wide) % 256 == 0 &&
              reinterpret_cast<std::uintptr_t>(wide_array) % 256 == 0 &&
              reinterpret_cast<std::uintptr_t>(nothrow_wide) % 256 == 0 &&
              reinterpret_cast<std::uintptr_t>(raw_aligned) % 4096 == 0;
    live_blocks_with_objects = heap->stats().live_blocks;
    delete single;
    delete[] array;
    delete nothrow_single;
    delete[] nothrow_array;
    delete wide;
    delete[] wide_array;
    delete nothrow_wide;
    ::operator delete(raw, std::size_t{1000});
    ::operator delete(raw_aligned, std::align_val_t{4096});
  }
  EXPECT_EQ(tally.seen, 9u);
  EXPECT_EQ(tally.foreign, 0u);
  EXPECT_TRUE(aligned);
  EXPECT_EQ(live_blocks_with_objects, 9u);
  EXPECT_EQ(heap->stats().live_blocks, 0u) << "every form of delete freed its block in the heap";
}

TEST(HeapScope, DeleteRoutesEachBlockToTheHeapOrSystemAllocatorItCameFrom) {
  HeapPtr a = Heap::create();
  HeapPtr b = Heap::create();
  const std::size_t ignored_frees_before = Zone::stats().ignored_frees;
  int* from_system = new int(10);  // no heap is current yet
  int* from_a = nullptr;
  int* from_b = nullptr;
  int* from_system_inside_a = nullptr;
  Heap* owners[4] = {};
  std::size_t a_live[4] = {};
  std::size_t b_live[3] = {};
  {
    HeapScope in_a(*a);
    from_a = new int(11);
    {
      HeapScope in_b(*b);
      from_b = new int(12);
      {
        HeapScope in_system(nullptr);
        from_system_inside_a = new int(13);
      }
    }
    owners[0] = Heap::owner_of(from_system);
    owners[1] = Heap::owner_of(from_a);
    owners[2] = Heap::owner_of(from_b);
    owners[3] = Heap::owner_of(from_system_inside_a);
    a_live[0] = a->stats().live_blocks;
    // System blocks deleted while a heap is current go back to the system allocator.
    delete from_system;
    delete from_system_inside_a;
    a_live[1] = a->stats().live_blocks;
    // A heap block deleted while its heap is current goes back to that heap.
    delete from_a;
    a_live[2] = a->stats().live_blocks;
    {
      HeapScope in_b(*b);
      b_live[0] = b->stats().live_blocks;
      delete from_b;
      b_live[1] = b->stats().live_blocks;
      a_live[3] = a->stats().live_blocks;
    }
    b_live[2] = b->stats().live_blocks;
  }
  EXPECT_EQ(owners[0], nullptr);
  EXPECT_EQ(owners[1], a.get());
  EXPECT_EQ(owners[2], b.get());
  EXPECT_EQ(owners[3], nullptr);
  EXPECT_EQ(a_live[0], 1u);
  EXPECT_EQ(a_live[1], 1u) << "deleting system blocks left heap A alone";
  EXPECT_EQ(a_live[2], 0u);
  EXPECT_EQ(a_live[3], 0u);
  EXPECT_EQ(b_live[0], 1u);
  EXPECT_EQ(b_live[1], 0u);
  EXPECT_EQ(b_live[2], 0u);
  EXPECT_EQ(Zone::stats().ignored_frees, ignored_frees_before) << "no free was misrouted";
}

TEST(HeapScope, TheCurrentHeapBelongsToTheThreadThatMadeIt) {
  HeapPtr heap = Heap::create();
  std::atomic<int> step{0};
  std::atomic<Heap*> seen_by_other_thread{heap.get()};
  std::atomic<Heap*> owner_of_other_threads_block{heap.get()};
  // The thread is started outside the scope: std::thread allocates its state in the starting
  // thread and frees it in the new one.
  std::thread other([&] {
    while (step.load() != 1) std::this_thread::yield();
    seen_by_other_thread = current_heap();
    int* p = new int(5);
    owner_of_other_threads_block = Heap::owner_of(p);
    delete p;
    step = 2;
  });
  Heap* seen_here = nullptr;
  {
    HeapScope scope(*heap);
    step = 1;
    while (step.load() != 2) std::this_thread::yield();
    seen_here = current_heap();
  }
  other.join();
  EXPECT_EQ(seen_here, heap.get());
  EXPECT_EQ(seen_by_other_thread.load(), nullptr);
  EXPECT_EQ(owner_of_other_threads_block.load(), nullptr);
  EXPECT_EQ(heap->stats().live_blocks, 0u);
}

TEST(HeapScope, AHeapCanBeCurrentOnAnotherThreadAfterThisOneIsDoneWithIt) {
  HeapPtr heap = Heap::create();
  int* made_here = nullptr;
  {
    HeapScope scope(*heap);
    made_here = new int(7);
  }
  bool freed_there = false;
  std::thread other([&] {
    HeapScope scope(*heap);
    const bool was_live = heap->stats().live_blocks == 1 && *made_here == 7;
    delete made_here;
    freed_there = was_live && heap->stats().live_blocks == 0;
  });
  other.join();
  EXPECT_TRUE(freed_there);
}

// Regression: plain `new` of a tiny object used to be served from the 16-byte class whenever the
// 8-byte free list was empty (the slow path applied the default new alignment), so every such
// block was freed onto the other class's list and every later `new` took the slow path again.
TEST(HeapScope, PlainNewServesEachSizeFromItsOwnClassAndReusesTheFreedBlock) {
  auto heap = Heap::create();
  std::size_t usable[2] = {};
  void* blocks[2] = {};
  {
    HeapScope scope(*heap);
    for (int round = 0; round < 2; ++round) {
      blocks[round] = ::operator new(8);
      usable[round] = heap->usable_size(blocks[round]);
      ::operator delete(blocks[round], 8);
    }
  }
  EXPECT_EQ(usable[0], 8u);
  EXPECT_EQ(usable[1], 8u);
  EXPECT_EQ(blocks[1], blocks[0]) << "the freed block is handed out again";
  EXPECT_EQ(heap->stats().classes[1].live_blocks + heap->stats().classes[1].free_blocks, 0u);
}

}  // namespace
}  // namespace reheap
