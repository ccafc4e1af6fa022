// WriteTracker: the pages written since the last look, as the kernel records them
// (heap/src/os/write_tracker.h). Every test skips, naming the reason, where the process cannot
// track writes (no userfaultfd, or a kernel before 6.7).
#include "../../heap/src/os/write_tracker.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "reheap/heap.h"
#include "reheap/heap_scope.h"

namespace {

using reheap::detail::os::PageRange;
using reheap::detail::os::WriteTracker;

const std::uintptr_t kPage = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
constexpr std::uintptr_t kPageTableSpan = std::uintptr_t{2} << 20;  // one page table maps 2 MiB

#define SKIP_UNLESS_AVAILABLE()                                                               \
  do {                                                                                        \
    std::string why_;                                                                         \
    if (!WriteTracker::available(&why_)) {                                                    \
      GTEST_SKIP() << "this machine cannot track writes: " << why_;                           \
    }                                                                                         \
  } while (false)

// A fresh anonymous private mapping, aligned to 2 MiB (so that page-table boundaries are known),
// with transparent huge pages off as in the reheap zone. No page is touched.
class Region {
 public:
  explicit Region(std::size_t bytes) : bytes_(bytes) {
    raw_bytes_ = bytes + kPageTableSpan;
    void* p = ::mmap(nullptr, raw_bytes_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return;
    raw_ = static_cast<char*>(p);
    const auto a = reinterpret_cast<std::uintptr_t>(raw_);
    base_ = reinterpret_cast<char*>((a + kPageTableSpan - 1) & ~(kPageTableSpan - 1));
    ::madvise(base_, bytes_, MADV_NOHUGEPAGE);
  }
  ~Region() {
    if (raw_ != nullptr) ::munmap(raw_, raw_bytes_);
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  bool ok() const { return raw_ != nullptr; }
  char* page(std::size_t i) const { return base_ + i * kPage; }
  PageRange range() const {
    const auto b = reinterpret_cast<std::uintptr_t>(base_);
    return {b, b + bytes_};
  }
  // Pages [first, last) of this region as a PageRange.
  PageRange pages(std::size_t first, std::size_t last) const {
    const auto b = reinterpret_cast<std::uintptr_t>(base_);
    return {b + first * kPage, b + last * kPage};
  }
  void write(std::size_t i, char value = 1) const { *static_cast<volatile char*>(page(i)) = value; }
  char read(std::size_t i) const { return *static_cast<volatile char*>(page(i)); }
  void discard(std::size_t first, std::size_t count) const {
    ASSERT_EQ(::madvise(page(first), count * kPage, MADV_DONTNEED), 0);
  }

 private:
  std::size_t bytes_;
  std::size_t raw_bytes_ = 0;
  char* raw_ = nullptr;
  char* base_ = nullptr;
};

bool same_runs(const std::vector<PageRange>& a, const std::vector<PageRange>& b) {
  return std::equal(
      a.begin(), a.end(), b.begin(), b.end(),
      [](const PageRange& x, const PageRange& y) { return x.begin == y.begin && x.end == y.end; });
}

// Prints runs as page indices relative to `base`, so failures read as "[3,4) [10,12)".
std::string describe(const std::vector<PageRange>& runs, std::uintptr_t base) {
  std::string s;
  for (const PageRange& r : runs) {
    s.append("[").append(std::to_string((r.begin - base) / kPage));
    s.append(",").append(std::to_string((r.end - base) / kPage)).append(") ");
  }
  return s.empty() ? "(none)" : s;
}

// The maximal runs covering `pages` (indices into `region`).
std::vector<PageRange> runs_of(const Region& region, std::vector<std::size_t> pages) {
  std::sort(pages.begin(), pages.end());
  pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
  std::vector<PageRange> runs;
  for (std::size_t p : pages) {
    const PageRange one = region.pages(p, p + 1);
    if (!runs.empty() && runs.back().end == one.begin) {
      runs.back().end = one.end;
    } else {
      runs.push_back(one);
    }
  }
  return runs;
}

std::vector<PageRange> collect(WriteTracker& tracker, PageRange r) {
  std::vector<PageRange> written;
  std::string error;
  EXPECT_TRUE(tracker.collect(r, written, &error)) << error;
  return written;
}

// Compares reported runs with the expected ones; `actual` is evaluated once (it may be a collect).
::testing::AssertionResult runs_are(const Region& region, const std::vector<PageRange>& actual,
                                    const std::vector<PageRange>& expected) {
  if (same_runs(actual, expected)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "reported " << describe(actual, region.range().begin)
                                       << "\nexpected " << describe(expected, region.range().begin);
}

#define EXPECT_RUNS(region, actual, expected) EXPECT_TRUE(runs_are((region), (actual), (expected)))

TEST(WriteTracker, NamesItsMechanismAndWhyItIsUnavailable) {
  EXPECT_STREQ(WriteTracker::mechanism(), "userfaultfd-wp-async+PAGEMAP_SCAN");
  std::string why;
  if (!WriteTracker::available(&why)) {
    EXPECT_FALSE(why.empty());
    GTEST_SKIP() << "this machine cannot track writes: " << why;
  }
  EXPECT_TRUE(why.empty());
}

TEST(WriteTracker, AFreshlyTrackedRangeHasNothingWritten) {
  SKIP_UNLESS_AVAILABLE();
  Region region(8 << 20);
  ASSERT_TRUE(region.ok());
  for (std::size_t i = 0; i < 2048; i += 7) region.write(i);  // written before: counts as clean
  WriteTracker tracker;
  std::string error;
  ASSERT_TRUE(tracker.track(region.range(), &error)) << error;
  EXPECT_TRUE(tracker.tracking(region.range()));
  EXPECT_RUNS(region, collect(tracker, region.range()), std::vector<PageRange>{});
}

TEST(WriteTracker, ReportsExactlyTheWrittenPagesAsMergedRunsThenNothing) {
  SKIP_UNLESS_AVAILABLE();
  Region region(8 << 20);
  ASSERT_TRUE(region.ok());
  for (std::size_t i = 0; i < 2048; i += 3) region.write(i);  // some pages populated, some not
  WriteTracker tracker;
  std::string error;
  ASSERT_TRUE(tracker.track(region.range(), &error)) << error;

  const std::vector<std::size_t> pages = {0, 3, 10, 11, 12, 511, 512, 700, 1500, 2047};
  for (std::size_t p : pages) region.write(p, 2);
  region.write(12, 3);  // a second store to a page is the same page
  EXPECT_RUNS(region, collect(tracker, region.range()), runs_of(region, pages));
  EXPECT_RUNS(region, collect(tracker, region.range()), std::vector<PageRange>{});

  const std::vector<std::size_t> again = {3, 4, 1499};
  for (std::size_t p : again) region.write(p, 4);
  EXPECT_RUNS(region, collect(tracker, region.range()), runs_of(region, again));
  EXPECT_RUNS(region, collect(tracker, region.range()), std::vector<PageRange>{});
}

TEST(WriteTracker, NeverTouchedPagesAreProtectedToo) {
  SKIP_UNLESS_AVAILABLE();
  Region region(8 << 20);
  ASSERT_TRUE(region.ok());
  WriteTracker tracker;
  std::string error;
  ASSERT_TRUE(tracker.track(region.range(), &error)) << error;
  const std::vector<std::size_t> pages = {1, 2, 600, 1024, 2000};  // first touch is a write
  for (std::size_t p : pages) region.write(p);
  EXPECT_RUNS(region, collect(tracker, region.range()), runs_of(region, pages));
  EXPECT_RUNS(region, collect(tracker, region.range()), std::vector<PageRange>{});
}

TEST(WriteTracker, ReadsDoNotCountAsWrites) {
  SKIP_UNLESS_AVAILABLE();
  Region region(4 << 20);
  ASSERT_TRUE(region.ok());
  for (std::size_t i = 0; i < 1024; i += 2) region.write(i);  // even pages populated
  WriteTracker tracker;
  std::string error;
  ASSERT_TRUE(tracker.track(region.range(), &error)) << error;
  int sum = 0;
  for (std::size_t i = 0; i < 1024; ++i) sum += region.read(i);  // odd ones never touched before
  EXPECT_EQ(sum, 512);
  EXPECT_RUNS(region, collect(tracker, region.range()), std::vector<PageRange>{});
  region.write(5);  // a write after a read of a never-touched page (the zero page) is seen
  EXPECT_RUNS(region, collect(tracker, region.range()), runs_of(region, {5}));
}

TEST(WriteTracker, DiscardedThenWrittenPagesAreReported) {
  SKIP_UNLESS_AVAILABLE();
  Region region(8 << 20);
  ASSERT_TRUE(region.ok());
  for (std::size_t i = 0; i < 2048; ++i) region.write(i);
  WriteTracker tracker;
  std::string error;
  ASSERT_TRUE(tracker.track(region.range(), &error)) << error;
  // One page (its page table survives) and a whole 2 MiB page table's worth, which Linux frees
  // (CONFIG_PT_RECLAIM); both then written again.
  region.discard(10, 1);
  region.discard(512, 512);
  (void)collect(tracker, region.range());  // whatever the discard itself shows (next test)
  region.discard(20, 1);
  region.discard(1024, 512);
  region.write(20, 7);
  region.write(1100, 7);
  const std::vector<PageRange> got = collect(tracker, region.range());
  for (std::size_t p : {std::size_t{20}, std::size_t{1100}}) {
    const PageRange page = region.pages(p, p + 1);
    EXPECT_TRUE(
        std::any_of(got.begin(), got.end(),
                    [&](const PageRange& r) { return r.begin <= page.begin && page.end <= r.end; }))
        << "page " << p << " not in " << describe(got, region.range().begin);
  }
  EXPECT_EQ(region.read(20), 7);
  EXPECT_EQ(region.read(21), 1);
  EXPECT_EQ(region.read(1101), 0);
  EXPECT_RUNS(region, collect(tracker, region.range()), std::vector<PageRange>{});
}

// A discard changes what the pages read (zero), so it is reported even if the pages are not
// written again. The whole-page-table case (Linux frees the emptied page table) relies on
// pagemap_scan_pte_hole() reporting holes in a uffd-wp VMA as written, a 2026 fix of
// UFFD_FEATURE_WP_UNPOPULATED that the kernels here have; without it a discard of a 2 MiB-aligned
// 2 MiB span goes unreported until the pages are touched.
TEST(WriteTracker, DiscardedPagesAreReportedEvenIfNotWrittenAgain) {
  SKIP_UNLESS_AVAILABLE();
  Region region(8 << 20);
  ASSERT_TRUE(region.ok());
  for (std::size_t i = 0; i < 2048; ++i) region.write(i);
  WriteTracker tracker;
  std::string error;
  ASSERT_TRUE(tracker.track(region.range(), &error)) << error;
  region.discard(10, 2);
  EXPECT_RUNS(region, collect(tracker, region.range()),
              (std::vector<PageRange>{region.pages(10, 12)}));
  region.discard(512, 512);
  EXPECT_RUNS(region, collect(tracker, region.range()),
              (std::vector<PageRange>{region.pages(512, 1024)}))
      << "\n(this kernel does not report a discarded page table as written: the snapshot writer "
         "must record discards itself)";
  EXPECT_RUNS(region, collect(tracker, region.range()), std::vector<PageRange>{});
  // Reading a discarded (re-protected) page does not count either.
  EXPECT_EQ(region.read(600), 0);
  EXPECT_RUNS(region, collect(tracker, region.range()), std::vector<PageRange>{});
}

TEST(WriteTracker, WritesByTheKernelCount) {
  SKIP_UNLESS_AVAILABLE();
  Region region(2 << 20);
  ASSERT_TRUE(region.ok());
  WriteTracker tracker;
  std::string error;
  ASSERT_TRUE(tracker.track(region.range(), &error)) << error;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "hello", 5), 5);
  ASSERT_EQ(::read(fds[0], region.page(300) + 10, 5), 5);  // copy_to_user into a tracked page
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_EQ(std::memcmp(region.page(300) + 10, "hello", 5), 0);
  EXPECT_RUNS(region, collect(tracker, region.range()), runs_of(region, {300}));
}

TEST(WriteTracker, CollectAppendsAndMergesOnlyWhatItAppends) {
  SKIP_UNLESS_AVAILABLE();
  Region region(2 << 20);
  ASSERT_TRUE(region.ok());
  WriteTracker tracker;
  std::string error;
  ASSERT_TRUE(tracker.track(region.range(), &error)) << error;
  region.write(4);
  region.write(5);
  const PageRange before = region.pages(3, 4);  // ends where the first run begins
  std::vector<PageRange> written = {before};
  ASSERT_TRUE(tracker.collect(region.range(), written, &error)) << error;
  EXPECT_RUNS(region, written, (std::vector<PageRange>{before, region.pages(4, 6)}));
}

TEST(WriteTracker, TwoTrackersOnTwoRangesAreIndependent) {
  SKIP_UNLESS_AVAILABLE();
  Region region(4 << 20);
  ASSERT_TRUE(region.ok());
  // Adjacent halves of one mapping, tracked by two trackers.
  const PageRange a = region.pages(0, 512), b = region.pages(512, 1024);
  WriteTracker ta, tb;
  std::string error;
  ASSERT_TRUE(ta.track(a, &error)) << error;
  ASSERT_TRUE(tb.track(b, &error)) << error;
  EXPECT_FALSE(ta.tracking(b));
  EXPECT_FALSE(tb.tracking(a));
  region.write(7);
  region.write(511);
  region.write(512);
  region.write(900);
  EXPECT_RUNS(region, collect(ta, a), runs_of(region, {7, 511}));
  region.write(8);
  EXPECT_RUNS(region, collect(tb, b), runs_of(region, {512, 900}));
  EXPECT_RUNS(region, collect(ta, a), runs_of(region, {8}));
  // Stopping one leaves the other tracking.
  ta.untrack(a);
  region.write(901);
  EXPECT_RUNS(region, collect(tb, b), runs_of(region, {901}));
}

TEST(WriteTracker, OneTrackerTracksManyRanges) {
  SKIP_UNLESS_AVAILABLE();
  Region region(8 << 20);
  ASSERT_TRUE(region.ok());
  WriteTracker tracker;
  std::string error;
  // Every other 16-page range, tracked out of order.
  std::vector<PageRange> ranges;
  for (std::size_t i = 0; i < 64; ++i) ranges.push_back(region.pages(i * 32, i * 32 + 16));
  std::shuffle(ranges.begin(), ranges.end(), std::mt19937(7));
  for (const PageRange& r : ranges) ASSERT_TRUE(tracker.track(r, &error)) << error;
  for (std::size_t i = 0; i < 64; ++i) {
    region.write(i * 32 + i % 16);
    region.write(i * 32 + 16);  // between tracked ranges
  }
  for (std::size_t i = 0; i < 64; ++i) {
    const PageRange r = region.pages(i * 32, i * 32 + 16);
    ASSERT_TRUE(tracker.tracking(r));
    EXPECT_RUNS(region, collect(tracker, r), runs_of(region, {i * 32 + i % 16}));
  }
  for (std::size_t i = 0; i < 64; i += 2) tracker.untrack(region.pages(i * 32, i * 32 + 16));
  for (std::size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(tracker.tracking(region.pages(i * 32, i * 32 + 16)), i % 2 == 1);
  }
}

TEST(WriteTracker, UntrackThenTrackAgainStartsClean) {
  SKIP_UNLESS_AVAILABLE();
  Region region(2 << 20);
  ASSERT_TRUE(region.ok());
  WriteTracker tracker;
  std::string error;
  ASSERT_TRUE(tracker.track(region.range(), &error)) << error;
  region.write(1);
  tracker.untrack(region.range());
  EXPECT_FALSE(tracker.tracking(region.range()));
  std::vector<PageRange> written;
  EXPECT_FALSE(tracker.collect(region.range(), written, &error));
  EXPECT_NE(error.find("not tracked"), std::string::npos) << error;
  region.write(2);  // untracked: the page is written without a fault and without a record
  ASSERT_TRUE(tracker.track(region.range(), &error)) << error;
  EXPECT_RUNS(region, collect(tracker, region.range()), std::vector<PageRange>{});
  region.write(3);
  EXPECT_RUNS(region, collect(tracker, region.range()), runs_of(region, {3}));
}

TEST(WriteTracker, TrackRefusesBadRangesAndRegistersNothing) {
  SKIP_UNLESS_AVAILABLE();
  Region region(2 << 20);
  ASSERT_TRUE(region.ok());
  WriteTracker tracker;
  std::string error;
  const PageRange r = region.range();
  EXPECT_FALSE(tracker.track({r.begin + 1, r.end}, &error));
  EXPECT_FALSE(error.empty());
  EXPECT_FALSE(tracker.track({r.begin, r.begin}, &error));
  ASSERT_TRUE(tracker.track(region.pages(0, 100), &error)) << error;
  error.clear();
  EXPECT_FALSE(tracker.track(region.pages(50, 150), &error));
  EXPECT_NE(error.find("overlaps"), std::string::npos) << error;

  // A range that is not mapped: the kernel refuses it, and the tracker keeps nothing.
  void* p = ::mmap(nullptr, 16 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  ASSERT_EQ(::munmap(p, 16 * kPage), 0);
  const auto gone = reinterpret_cast<std::uintptr_t>(p);
  error.clear();
  EXPECT_FALSE(tracker.track({gone, gone + 16 * kPage}, &error));
  EXPECT_FALSE(error.empty());
  EXPECT_FALSE(tracker.tracking({gone, gone + 16 * kPage}));
  EXPECT_FALSE(tracker.track({gone, gone + 16 * kPage}, nullptr));  // no message asked for

  // The first range is still tracked.
  region.write(42);
  EXPECT_RUNS(region, collect(tracker, region.pages(0, 100)), runs_of(region, {42}));
}

TEST(WriteTracker, FourThreadsTrackTheirOwnRangesConcurrently) {
  SKIP_UNLESS_AVAILABLE();
  constexpr int kThreads = 4;
  constexpr int kRounds = 50;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      Region region(4 << 20);
      if (!region.ok()) {
        failures.fetch_add(1);
        return;
      }
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int round = 0; round < kRounds; ++round) {
        WriteTracker tracker;
        std::string error;
        if (!tracker.track(region.range(), &error)) {
          failures.fetch_add(1);
          return;
        }
        for (int step = 0; step < 4; ++step) {
          std::vector<std::size_t> pages;
          for (int i = 0; i < 20; ++i) pages.push_back(rng() % 1024);
          for (std::size_t p : pages) region.write(p, static_cast<char>(t));
          std::vector<PageRange> written;
          if (!tracker.collect(region.range(), written, &error) ||
              !same_runs(written, runs_of(region, pages))) {
            failures.fetch_add(1);
          }
        }
        if (round % 2 == 1) tracker.untrack(region.range());  // else the destructor does
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(WriteTracker, AWriteRacingWithCollectIsNeverLost) {
  SKIP_UNLESS_AVAILABLE();
  constexpr std::size_t kPages = 512;
  Region region(kPages * kPage);
  ASSERT_TRUE(region.ok());
  WriteTracker tracker;
  std::string error;
  ASSERT_TRUE(tracker.track(region.range(), &error)) << error;
  // A writer stores to random pages while this thread takes "snapshots": collect, then copy each
  // reported page's first byte into `image`. Once the writer has stopped and one more snapshot
  // is taken, the image must equal the memory: every last store was reported by a collect that
  // began after it. (Relaxed atomics only keep the deliberate race defined for TSan.)
  auto byte = [&](std::size_t page) { return std::atomic_ref<char>(*region.page(page)); };
  std::atomic<bool> stop{false};
  std::atomic<int> stores{0};
  std::thread writer([&] {
    std::mt19937 rng(3);
    char value = 1;
    while (!stop.load(std::memory_order_relaxed)) {
      byte(rng() % kPages).store(value, std::memory_order_relaxed);
      value = static_cast<char>(value % 120 + 1);
      stores.fetch_add(1, std::memory_order_relaxed);
    }
  });
  std::vector<char> image(kPages, 0);
  auto snapshot = [&] {
    std::vector<PageRange> written;
    if (!tracker.collect(region.range(), written, &error)) return false;
    for (const PageRange& r : written) {
      for (std::uintptr_t a = r.begin; a < r.end; a += kPage) {
        const std::size_t page = (a - region.range().begin) / kPage;
        image[page] = byte(page).load(std::memory_order_relaxed);
      }
    }
    return true;
  };
  bool ok = true;
  for (int i = 0; ok && (i < 2000 || stores.load() < 20000); ++i) ok = snapshot();
  stop = true;
  writer.join();
  ASSERT_TRUE(ok) << error;
  ASSERT_TRUE(snapshot()) << error;
  for (std::size_t i = 0; i < kPages; ++i) ASSERT_EQ(image[i], region.read(i)) << "page " << i;
}

TEST(WriteTracker, AGibibyteWithOnePercentScatteredWritesIsCollectedExactly) {
  SKIP_UNLESS_AVAILABLE();
  constexpr std::size_t kBytes = std::size_t{1} << 30;
  Region region(kBytes);
  ASSERT_TRUE(region.ok());
  const std::size_t pages = kBytes / kPage;
  WriteTracker tracker;
  std::string error;
  ASSERT_TRUE(tracker.track(region.range(), &error)) << error;
  std::mt19937_64 rng(42);
  for (int round = 0; round < 2; ++round) {
    std::vector<std::size_t> chosen;
    for (std::size_t i = 0; i < pages / 100; ++i) chosen.push_back(rng() % pages);
    for (std::size_t p : chosen) region.write(p);
    const std::vector<PageRange> expected = runs_of(region, chosen);
    ASSERT_GT(expected.size(), WriteTracker::kRegionsPerScan);  // several scan calls
    const std::vector<PageRange> got = collect(tracker, region.range());
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_TRUE(same_runs(got, expected));
    EXPECT_TRUE(collect(tracker, region.range()).empty());
  }
}

// The shared descriptors name the parent's userfaultfd context and page tables: a child that
// used them would scan (and re-protect) or unregister the parent's memory, losing its writes.
TEST(WriteTracker, AForkedChildNeitherTracksNorDisturbsTheParent) {
  SKIP_UNLESS_AVAILABLE();
  Region region(2 << 20);
  ASSERT_TRUE(region.ok());
  WriteTracker tracker;
  std::string error;
  ASSERT_TRUE(tracker.track(region.range(), &error)) << error;
  region.write(8);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::vector<PageRange> written;
    std::string child_error;
    const bool collected = tracker.collect(region.range(), written, &child_error);
    WriteTracker other;
    const bool tracked = other.track(region.pages(100, 101), &child_error);
    tracker.untrack(region.range());
    ::_exit(collected || tracked || child_error.find("fork") == std::string::npos ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  region.write(9);
  EXPECT_RUNS(region, collect(tracker, region.range()), runs_of(region, {8, 9}));
}

// The tracker may run while a heap is current; its own bookkeeping must not land in that heap.
TEST(WriteTracker, AllocatesNothingInTheCurrentHeap) {
  SKIP_UNLESS_AVAILABLE();
  Region region(4 << 20);
  ASSERT_TRUE(region.ok());
  reheap::HeapPtr heap = reheap::Heap::create();
  const std::size_t live_before = heap->stats().live_blocks;
  {
    reheap::HeapScope scope(*heap);
    WriteTracker tracker;
    for (std::size_t i = 0; i < 100; ++i) {  // grows the list of tracked ranges several times
      ASSERT_TRUE(tracker.track(region.pages(i * 8, i * 8 + 4), nullptr));
    }
    region.write(0);
    std::vector<PageRange> written;
    written.reserve(4);  // the caller's vector, in the current heap by the caller's choice
    EXPECT_EQ(heap->stats().live_blocks, live_before + 1);
    ASSERT_TRUE(tracker.collect(region.pages(0, 4), written, nullptr));
    EXPECT_EQ(written.size(), 1u);
    EXPECT_EQ(heap->stats().live_blocks, live_before + 1);
  }
  EXPECT_EQ(heap->stats().live_blocks, live_before);
}

// Memory of a reheap heap (the zone: MAP_NORESERVE, made accessible by mprotect) is tracked like
// any anonymous mapping.
TEST(WriteTracker, TracksAHeapsMemory) {
  SKIP_UNLESS_AVAILABLE();
  reheap::HeapPtr heap = reheap::Heap::create();
  reheap::HeapScope scope(*heap);
  constexpr std::size_t kBytes = 8 << 20;  // a huge block: its own chunk run
  char* block = new char[kBytes];
  const auto a = reinterpret_cast<std::uintptr_t>(block);
  const PageRange r{(a + kPage - 1) & ~(kPage - 1), (a + kBytes) & ~(kPage - 1)};
  {
    WriteTracker tracker;
    std::string error;
    ASSERT_TRUE(tracker.track(r, &error)) << error;
    *reinterpret_cast<volatile char*>(r.begin + 5 * kPage) = 1;
    std::vector<PageRange> written;
    ASSERT_TRUE(tracker.collect(r, written, &error)) << error;
    ASSERT_EQ(written.size(), 1u);
    EXPECT_EQ(written[0].begin, r.begin + 5 * kPage);
    EXPECT_EQ(written[0].end, r.begin + 6 * kPage);
  }  // untracked before the heap discards the block
  delete[] block;
}

}  // namespace
