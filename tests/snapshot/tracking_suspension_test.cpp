// Write tracking across a process checkpoint (reheap/write_tracking.h): while suspended, no
// userfaultfd is open and saves are full; after resume the first save is full, saying why, and
// holds what was written while suspended; increments follow it. A failed collect never
// produces an incomplete increment.
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <filesystem>
#include <string>

#include "cases.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "reheap/write_tracking.h"
#include "support.h"
#include "write_tracking_support.h"

namespace reheap::snaptest {
namespace {

// Descriptors of this process that are userfaultfds.
int open_userfaultfds() {
  int found = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    char target[PATH_MAX];
    const ssize_t n = ::readlink(entry.path().c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (std::strstr(target, "userfaultfd") != nullptr) ++found;
  }
  return found;
}

std::uint64_t restored_digest(const std::filesystem::path& file, const Case& c) {
  HeapPtr heap = restore(file);
  return digest_of(*heap, c);
}

// A heap built from case `name`, with a Snapshotter that has saved `dir`/full.snap when the
// kernel tracks writes (tracking(); tests skip otherwise, before anything is saved).
struct TrackedHeap {
  TempDir dir;
  const Case& c;
  HeapPtr heap = Heap::create();
  Snapshotter snapshotter;
  TrackedHeap(const char* name, std::uint64_t seed) : c(find_case(name)), snapshotter(built(*heap, c, seed)) {
    if (tracking()) snapshotter.save(dir / "full.snap");
  }
  static Heap& built(Heap& heap, const Case& c, std::uint64_t seed) {
    build_in(heap, c, seed);
    return heap;
  }
  bool tracking() const { return snapshotter.tracking().rfind("none", 0) != 0; }
};

// Resumes on scope exit, so that a failing assertion leaves tracking usable for later tests.
struct Suspension {
  WriteTrackingCensus census = suspend_write_tracking();
  ~Suspension() { resume_write_tracking(); }
};

TEST(TrackingSuspension, ClosesTheDescriptorAndMakesTheNextSaveFull) {
  TrackedHeap t("unordered", 3);
  REQUIRE_TRACKING_BY(t.snapshotter);
  auto& [dir, c, heap, snapshotter] = t;
  mutate_in(*heap, c, 1);
  ASSERT_EQ(snapshotter.save_increment(dir / "inc1.snap").kind, SnapshotKind::kIncremental);
  EXPECT_GE(open_userfaultfds(), 1);

  WriteTrackingCensus resumed;
  {
    Suspension suspended;
    EXPECT_TRUE(write_tracking_suspended());
    EXPECT_GE(suspended.census.trackers, 1u);
    EXPECT_GE(suspended.census.ranges, 1u);
    EXPECT_EQ(open_userfaultfds(), 0) << "a checkpointer cannot dump a userfaultfd";
    // Written while nothing tracks: only a full save can hold it.
    mutate_in(*heap, c, 2);
    resumed = resume_write_tracking();
  }
  EXPECT_FALSE(write_tracking_suspended());
  EXPECT_TRUE(resumed.error.empty()) << resumed.error;
  EXPECT_GE(resumed.ranges, 1u);
  EXPECT_GE(open_userfaultfds(), 1);

  const std::uint64_t want = digest_of(*heap, c);
  const SnapshotInfo after = snapshotter.save_increment(dir / "after.snap");
  EXPECT_EQ(after.kind, SnapshotKind::kFull);
  EXPECT_NE(after.fallback_reason.find("suspended for a process checkpoint"), std::string::npos)
      << after.fallback_reason;
  mutate_in(*heap, c, 3);
  const std::uint64_t want_next = digest_of(*heap, c);
  const SnapshotInfo next = snapshotter.save_increment(dir / "next.snap");
  EXPECT_EQ(next.kind, SnapshotKind::kIncremental) << next.fallback_reason;
  EXPECT_EQ(next.parent_id, after.id);
  heap.reset();

  EXPECT_EQ(restored_digest(dir / "after.snap", c), want);
  EXPECT_EQ(restored_digest(dir / "next.snap", c), want_next);
}

TEST(TrackingSuspension, SavesWhileSuspendedAreFullAndSayWhy) {
  TrackedHeap t("map", 4);
  REQUIRE_TRACKING_BY(t.snapshotter);
  auto& [dir, c, heap, snapshotter] = t;
  const Suspension suspended;
  mutate_in(*heap, c, 1);
  const std::uint64_t want = digest_of(*heap, c);
  const SnapshotInfo during = snapshotter.save_increment(dir / "during.snap");
  EXPECT_EQ(during.kind, SnapshotKind::kFull);
  EXPECT_FALSE(during.fallback_reason.empty());
  heap.reset();
  EXPECT_EQ(restored_digest(dir / "during.snap", c), want);
}

TEST(TrackingSuspension, SuspendAndResumeTwiceAreNoOps) {
  const Suspension suspended;
  EXPECT_EQ(suspend_write_tracking().ranges, 0u);
  EXPECT_TRUE(write_tracking_suspended());
  EXPECT_TRUE(resume_write_tracking().error.empty());
  EXPECT_FALSE(write_tracking_suspended());
  const WriteTrackingCensus again = resume_write_tracking();
  EXPECT_EQ(again.trackers, 0u);
  EXPECT_TRUE(again.error.empty());
  suspend_write_tracking();  // for the destructor's resume
}

// A forked child cannot collect (the descriptors name the parent), so an increment there would
// miss every page written since the parent. It used to be written anyway, incomplete; now the
// save fails with nothing written and the next save is full.
TEST(TrackingSuspension, AnIncrementWhoseWritesCannotBeCollectedIsNotWritten) {
  TrackedHeap t("map", 5);
  REQUIRE_TRACKING_BY(t.snapshotter);
  auto& [dir, c, heap, snapshotter] = t;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    mutate_in(*heap, c, 1);
    int code = 0;
    try {
      snapshotter.save_increment(dir / "inc.snap");
      code = 1;  // written: the bug
    } catch (const SnapshotError& e) {
      if (e.code() != SnapshotErrc::kIo) code = 2;
    }
    if (code == 0 && std::filesystem::exists(dir / "inc.snap")) code = 3;
    if (code == 0) {
      const SnapshotInfo next = snapshotter.save_increment(dir / "next.snap");
      if (next.kind != SnapshotKind::kFull) code = 4;
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: an incomplete increment was written; 2: another error; "
                                       "3: a file was left; 4: the next save was not full";
}

}  // namespace
}  // namespace reheap::snaptest
