// used_pages_digest: the state oracle of a recording (reheap/heap_digest.h) reads every used page
// of a heap - freed blocks included, which AddressSanitizer keeps poisoned - and its number moves
// with any byte the heap holds.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "reheap/heap.h"
#include "reheap/heap_digest.h"
#include "reheap/heap_scope.h"

namespace reheap::snaptest {
namespace {

TEST(UsedPagesDigest, ReadsFreedBlocksAndFollowsEveryByteTheHeapHolds) {
  HeapPtr heap = Heap::create();
  std::vector<char*> blocks;
  blocks.reserve(64);  // the vector lives outside the heap
  {
    HeapScope scope(heap.get());
    for (int i = 0; i < 64; ++i) {
      blocks.push_back(static_cast<char*>(::operator new(200)));
      std::memset(blocks.back(), i, 200);
    }
    for (std::size_t i = 0; i < blocks.size(); i += 2) ::operator delete(blocks[i]);
  }
  const std::uint64_t before = used_pages_digest(*heap);  // an ASan report if poison was read
  EXPECT_EQ(before, used_pages_digest(*heap));
  blocks[1][17] ^= 1;
  const std::uint64_t changed = used_pages_digest(*heap);
  EXPECT_NE(before, changed);
  blocks[1][17] ^= 1;
  EXPECT_EQ(before, used_pages_digest(*heap));
  {
    HeapScope scope(heap.get());  // the freed blocks are still freed blocks: reusable, poisoned again
    void* again = ::operator new(200);
    EXPECT_EQ(Heap::owner_of(again), heap.get());
    ::operator delete(again);
    for (std::size_t i = 1; i < blocks.size(); i += 2) ::operator delete(blocks[i]);
  }
}

}  // namespace
}  // namespace reheap::snaptest
