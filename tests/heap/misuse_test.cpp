// Misuse: freeing a block twice, freeing it while its heap is not current, freeing an address the
// heap never handed out, or freeing into a destroyed heap. Builds with REHEAP_CHECKS abort with a
// message naming the mistake. Other builds ignore the frees they can recognise as foreign (the
// block's heap is not current, or no live heap owns the address), count them in
// Zone::stats().ignored_frees, and leave every heap intact.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>

#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"
#include "misuse_support.h"

namespace reheap {
namespace {

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;

using testsupport::launder;

// Each build compiles the half of this file that specifies it, so that the other half is not
// registered (and counted as skipped) where it means nothing.
#if defined(REHEAP_TEST_CHECKS)

void* offset(void* p, std::size_t bytes) { return static_cast<unsigned char*>(p) + bytes; }

class MisuseDeathTest : public testsupport::CheckedDeathTest {};

TEST_F(MisuseDeathTest, DeletingASmallBlockTwiceAborts) {
  HeapPtr heap = Heap::create();
  EXPECT_DEATH(
      {
        HeapScope scope(*heap);
        void* p = ::operator new(64);
        void* same = launder(p);
        ::operator delete(p);
        ::operator delete(same);
      },
      "double free");
}

TEST_F(MisuseDeathTest, DeletingAMediumBlockTwiceAborts) {
  HeapPtr heap = Heap::create();
  EXPECT_DEATH(
      {
        HeapScope scope(*heap);
        void* p = ::operator new(10000);
        void* same = launder(p);
        ::operator delete(p);
        ::operator delete(same);
      },
      "double free");
}

TEST_F(MisuseDeathTest, DeletingAPageRunTwiceAborts) {
  HeapPtr heap = Heap::create();
  EXPECT_DEATH(
      {
        HeapScope scope(*heap);
        void* p = ::operator new(100 * KiB);
        void* same = launder(p);
        ::operator delete(p);
        ::operator delete(same);
      },
      "double free");
}

TEST_F(MisuseDeathTest, DeletingAHugeBlockTwiceAborts) {
  HeapPtr heap = Heap::create();
  EXPECT_DEATH(
      {
        HeapScope scope(*heap);
        void* p = ::operator new(3 * MiB);
        void* same = launder(p);
        ::operator delete(p);
        ::operator delete(same);
      },
      "double free");
}

TEST_F(MisuseDeathTest, DeallocatingTheSameBlockTwiceAborts) {
  HeapPtr heap = Heap::create();
  void* p = heap->allocate(200);
  void* same = launder(p);
  heap->deallocate(p);
  EXPECT_DEATH(heap->deallocate(same), "double free");
}

TEST_F(MisuseDeathTest, DeletingABlockWhileAnotherHeapIsCurrentAborts) {
  HeapPtr a = Heap::create();
  HeapPtr b = Heap::create();
  void* p = a->allocate(64);
  EXPECT_DEATH(
      {
        HeapScope scope(*b);
        ::operator delete(launder(p));
      },
      "not the current heap");
}

TEST_F(MisuseDeathTest, DeletingAHeapBlockWhileNoHeapIsCurrentAborts) {
  HeapPtr heap = Heap::create();
  void* p = heap->allocate(64);
  EXPECT_DEATH(::operator delete(launder(p)), "not the current heap");
}

TEST_F(MisuseDeathTest, DeletingAnAddressInsideASmallBlockAborts) {
  HeapPtr heap = Heap::create();
  void* p = heap->allocate(64);
  EXPECT_DEATH(
      {
        HeapScope scope(*heap);
        ::operator delete(launder(offset(p, 8)));
      },
      "never handed out");
}

TEST_F(MisuseDeathTest, DeletingAnAddressInsideAPageRunAborts) {
  HeapPtr heap = Heap::create();
  void* p = heap->allocate(64 * KiB);
  EXPECT_DEATH(
      {
        HeapScope scope(*heap);
        ::operator delete(launder(offset(p, 16 * KiB)));
      },
      "never handed out");
}

TEST_F(MisuseDeathTest, DeletingAnAddressInsideAHugeBlockAborts) {
  HeapPtr heap = Heap::create();
  void* p = heap->allocate(3 * MiB);
  EXPECT_DEATH(
      {
        HeapScope scope(*heap);
        ::operator delete(launder(offset(p, 1 * MiB)));
      },
      "never handed out");
}

// free_slow recognises the current heap's page runs first; an address of the heap's own chunk
// that is not a page run (here its state, in the header lane) must still be refused.
TEST_F(MisuseDeathTest, DeletingTheCurrentHeapsOwnStateAborts) {
  HeapPtr heap = Heap::create();
  EXPECT_DEATH(
      {
        HeapScope scope(*heap);
        ::operator delete(launder(heap.get()));
      },
      "never handed out");
}

TEST_F(MisuseDeathTest, DeallocatingAnAddressInsideABlockAborts) {
  HeapPtr heap = Heap::create();
  void* p = heap->allocate(64);
  EXPECT_DEATH(heap->deallocate(launder(offset(p, 16))), "never handed out");
}

TEST_F(MisuseDeathTest, DeletingABlockOfADestroyedHeapAborts) {
  HeapPtr heap = Heap::create();
  void* p = heap->allocate(64);
  heap.reset();
  EXPECT_DEATH(::operator delete(launder(p)), "no live heap");
}

TEST_F(MisuseDeathTest, DeletingABlockOfADestroyedHeapWhileAnotherIsCurrentAborts) {
  // `other` exists before the heap is destroyed, so that it cannot be given the destroyed heap's
  // chunk: the block's chunk is owned by nobody.
  HeapPtr other = Heap::create(HeapConfig{});
  HeapPtr heap = Heap::create();
  void* p = heap->allocate(64 * KiB);
  heap.reset();
  ASSERT_EQ(Heap::owner_of(p), nullptr);
  EXPECT_DEATH(
      {
        HeapScope scope(*other);
        ::operator delete(launder(p));
      },
      "no live heap");
}

#else  // Builds without REHEAP_CHECKS.

bool all_bytes_are(const void* p, std::size_t n, unsigned char value) {
  const auto* bytes = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    if (bytes[i] != value) return false;
  }
  return true;
}

class IgnoredFreeTest : public testing::Test {};

TEST_F(IgnoredFreeTest, DeletingABlockWhileAnotherHeapIsCurrentIsIgnoredAndCounted) {
  HeapPtr a = Heap::create();
  HeapPtr b = Heap::create();
  void* p = a->allocate(64);
  std::memset(p, 0xAB, 64);
  void* mine = b->allocate(64);
  std::memset(mine, 0xCD, 64);
  const std::size_t ignored_before = Zone::stats().ignored_frees;
  {
    HeapScope scope(*b);
    ::operator delete(launder(p));
  }
  EXPECT_EQ(Zone::stats().ignored_frees, ignored_before + 1);
  EXPECT_EQ(a->stats().live_blocks, 1u) << "the block stays live in its own heap";
  EXPECT_TRUE(all_bytes_are(p, 64, 0xAB));
  EXPECT_EQ(b->stats().live_blocks, 1u) << "the current heap is untouched";
  EXPECT_TRUE(all_bytes_are(mine, 64, 0xCD));
  // B hands out fresh blocks only, never A's.
  for (int i = 0; i < 1000; ++i) {
    void* q = b->allocate(64);
    ASSERT_TRUE(b->owns(q));
    ASSERT_NE(q, p);
  }
  // The block can still be freed properly.
  {
    HeapScope scope(*a);
    ::operator delete(p);
  }
  EXPECT_EQ(a->stats().live_blocks, 0u);
}

TEST_F(IgnoredFreeTest, DeletingAHeapBlockWhileNoHeapIsCurrentIsIgnoredAndCounted) {
  HeapPtr heap = Heap::create();
  void* p = heap->allocate(100 * KiB);
  std::memset(p, 0x11, 100 * KiB);
  const std::size_t ignored_before = Zone::stats().ignored_frees;
  ::operator delete(launder(p));
  EXPECT_EQ(Zone::stats().ignored_frees, ignored_before + 1);
  EXPECT_EQ(heap->stats().large_live_blocks, 1u);
  EXPECT_TRUE(all_bytes_are(p, 100 * KiB, 0x11));
  heap->deallocate(p);
  EXPECT_EQ(heap->stats().live_blocks, 0u);
}

// The first free ignored because its heap is not current is also said on stderr (in a fresh
// process: it is said once per process). A stale pointer's delete stays quiet: a static object
// destroyed at exit after its heap may do that legitimately.
TEST_F(IgnoredFreeTest, TheFirstFreeIgnoredBecauseItsHeapIsNotCurrentIsSaidOnStderr) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a new process: nothing said yet
  EXPECT_EXIT(
      {
        HeapPtr heap = Heap::create();
        ::operator delete(launder(heap->allocate(64)));
        std::_Exit(Zone::stats().ignored_frees == 1 ? 0 : 1);
      },
      testing::ExitedWithCode(0),
      "reheap: free of 0x[0-9a-f]+ ignored: the block belongs to heap [0-9]+, which is not the "
      "current heap \\(current: none\\); make its heap current with reheap::HeapScope");
  EXPECT_EXIT(
      {
        HeapPtr heap = Heap::create();
        void* p = heap->allocate(64);
        heap.reset();
        ::operator delete(launder(p));
        std::fprintf(stderr, "done\n");
        std::_Exit(0);
      },
      testing::ExitedWithCode(0), "^done\n$");
}

std::string file_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The object that freed another heap's block usually holds memory from outside its heap now, so
// a snapshot of that heap would not restore: saves refuse it, name it, and write nothing. The
// count is the heap's, not the zone's: other heaps save, and a heap later created on its
// recycled chunk starts clean.
TEST_F(IgnoredFreeTest, AHeapWhoseBlockWasFreedWhileItWasNotCurrentRefusesSaves) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("reheap-foreign-free-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  HeapPtr a = Heap::create();
  HeapPtr b = Heap::create();
  void* p = a->allocate(64);
  std::memset(p, 0xAB, 64);
  Snapshotter saves_a(*a, WriteTracking::kOff);
  saves_a.save(dir / "a.snap");
  const std::string saved = file_text(dir / "a.snap");
  {
    HeapScope scope(*b);
    ::operator delete(launder(p));
  }
  EXPECT_EQ(a->stats().foreign_frees, 1u);
  EXPECT_EQ(b->stats().foreign_frees, 0u);
  try {
    saves_a.save(dir / "a.snap");
    ADD_FAILURE() << "the save of a heap with a foreign free went through";
  } catch (const SnapshotError& e) {
    EXPECT_EQ(e.code(), SnapshotErrc::kMisuse);
    const std::string what = e.what();
    EXPECT_NE(what.find("heap " + std::to_string(a->id()) + ": "), std::string::npos) << what;
    EXPECT_NE(what.find("1 free(s) of its blocks were ignored"), std::string::npos) << what;
    EXPECT_NE(what.find("HeapScope"), std::string::npos) << what;
    EXPECT_NE(what.find("Nothing was written"), std::string::npos) << what;
  }
  EXPECT_EQ(file_text(dir / "a.snap"), saved) << "the previous file changed";
  EXPECT_THROW(Snapshotter(*a, WriteTracking::kOff).save(dir / "a2.snap"), SnapshotError);
  EXPECT_FALSE(std::filesystem::exists(dir / "a2.snap"));
  Snapshotter(*b, WriteTracking::kOff).save(dir / "b.snap");  // another heap saves
  // A heap created where `a` was (the zone's heap cache hands its first chunk on) starts clean.
  a.reset();
  HeapPtr c = Heap::create();
  EXPECT_EQ(c->stats().foreign_frees, 0u);
  Snapshotter(*c, WriteTracking::kOff).save(dir / "c.snap");
  std::filesystem::remove_all(dir);
}

TEST_F(IgnoredFreeTest, DeletingABlockOfADestroyedHeapIsIgnoredAndCounted) {
  HeapPtr heap = Heap::create();
  void* p = heap->allocate(64);
  heap.reset();
  const std::size_t ignored_before = Zone::stats().ignored_frees;
  ::operator delete(launder(p));
  EXPECT_EQ(Zone::stats().ignored_frees, ignored_before + 1);
  // The zone is intact: new heaps work.
  HeapPtr next = Heap::create();
  void* q = next->allocate(64);
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(next->owns(q));
  next->deallocate(q);
  EXPECT_EQ(next->stats().live_blocks, 0u);
}

#endif  // REHEAP_TEST_CHECKS

}  // namespace
}  // namespace reheap
