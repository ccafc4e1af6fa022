// Regressions found by reading the change (each failed before its fix): a failed increment must
// not make the next one read chunks the heap gave back meanwhile; a request the quarantined
// chunks cannot meet must not empty the quarantine; a restore that reserves the zone keeps the
// quarantine the program configured.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "misuse_support.h"
#include "reheap/byte_stream.h"
#include "reheap/heap.h"
#include "reheap/node_identity.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"

namespace reheap {
namespace {

// A sink whose disk is always full.
class FullDisk final : public ByteSink {
 public:
  void write(const void*, std::size_t) override {
    throw SnapshotError(SnapshotErrc::kNoSpace, "full-disk: no space left on device");
  }
};

int run_child(const char* mode, const std::string& arg);

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("reheap-review-" + std::to_string(::getpid()) + "-" + name);
}

TEST(ReviewRegression, AFailedIncrementDoesNotMakeTheNextOneReadChunksGivenBackMeanwhile) {
  const auto full = temp_path("full.snap");
  const auto next = temp_path("next.snap");
  HeapPtr heap = Heap::create();
  std::memset(heap->allocate(1000), 1, 1000);
  Snapshotter snapshots(*heap);
  snapshots.save(full);
  auto* huge = static_cast<unsigned char*>(heap->allocate(std::size_t{3} << 20));
  std::memset(huge, 2, std::size_t{3} << 20);
  FullDisk disk;
  EXPECT_THROW(snapshots.write_increment(disk, full.filename().string()), SnapshotError);
  // The failed save kept the huge block's pages pending; the block now goes back to the zone
  // (into quarantine: inaccessible in checked builds, where reading it crashed the next save).
  heap->deallocate(huge);
  std::memset(heap->allocate(500), 3, 500);
  EXPECT_NO_THROW(snapshots.save_increment(next));
  heap.reset();
  HeapPtr back = restore(next);
  EXPECT_EQ(back->stats().huge_live_blocks, 0u);
  back.reset();
  std::filesystem::remove(full);
  std::filesystem::remove(next);
}

// Runs `scenario` in a child process of its own (fork before this process reserved anything is
// not possible here, so the child starts from a fresh exec of this binary).
int run_child(const char* mode, const std::string& arg) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/proc/self/exe", "adversarial_tests", mode, arg.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(ReviewRegression, ARestoreThatReservesTheZoneKeepsTheConfiguredQuarantine) {
  const auto file = temp_path("quarantine.snap");
  {
    HeapPtr heap = Heap::create();
    std::memset(heap->allocate(100), 4, 100);
    Snapshotter(*heap).save(file);
  }
  EXPECT_EQ(run_child("--restore-keeps-quarantine", file.string()), 0);
  std::filesystem::remove(file);
}

// A zone whose large half holds only 2-chunk blocks and 2-chunk holes, half of the holes
// waiting in quarantine: a 3-chunk request can be met by no run, waiting or not.
TEST(ReviewRegression, ARequestTheQuarantinedChunksCannotMeetLeavesThemInQuarantine) {
  EXPECT_EQ(run_child("--scattered-quarantine", ""), 0);
}

}  // namespace
}  // namespace reheap

int scattered_quarantine() {
  // The scenario needs blocks that tile the large half from its first chunk: node 0's first
  // incarnation (a fresh counter) starts its search there; another would start one window in
  // (zone.h, "Slices"), leaving single chunks at both ends of the half.
  char state[] = "/tmp/reheap-scattered-XXXXXX";
  if (::mkdtemp(state) == nullptr) return 6;
  reheap::NodeIdentity::configure(reheap::NodeIdentityConfig{0, state});
  reheap::Zone::configure(reheap::ZoneConfig{0, std::size_t{64} << 30, 4096});  // 128 may wait
  const reheap::NodeIdentity identity = reheap::NodeIdentity::current();
  std::filesystem::remove_all(state);
  if (identity.incarnation != 0) return 7;
  reheap::HeapPtr heap = reheap::Heap::create();
  std::vector<void*> blocks;
  while (void* p = heap->allocate(std::size_t{100} << 20)) blocks.push_back(p);  // 2 chunks each
  if (blocks.size() < 200) return 2;
  for (std::size_t i = 0; i < blocks.size(); i += 2) heap->deallocate(blocks[i]);
  const std::size_t waiting = reheap::Zone::stats().quarantined_chunks;
  if (waiting != 128) return 3;
  if (heap->allocate(std::size_t{150} << 20) != nullptr) return 4;  // 3 chunks: no such run
  return reheap::Zone::stats().quarantined_chunks == waiting ? 0 : 5;
}

// The child's side of ARestoreThatReservesTheZoneKeepsTheConfiguredQuarantine: configure no
// quarantine, let restore reserve the zone, and check that a destroyed heap's chunk is free at
// once (the quarantine was 4096 again when restore reset the whole zone configuration).
extern "C" int reheap_adversarial_child(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--scattered-quarantine") == 0) return scattered_quarantine();
  if (argc < 3 || std::strcmp(argv[1], "--restore-keeps-quarantine") != 0) return -1;
  reheap::Zone::set_quarantine(0);
  reheap::RestoreOptions options;
  options.layout = reheap::LayoutCheck::kNone;
  reheap::HeapPtr heap = reheap::restore(argv[2], options);
  heap.reset();
  return reheap::Zone::stats().quarantined_chunks == 0 ? 0 : 3;
}
