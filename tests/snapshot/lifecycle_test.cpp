// Lifecycles: restoring, attaching, saving increments and destroying, over and over, leaks
// nothing - the zone's chunks, file descriptors and mappings stay flat - and a restored heap's
// chunks are its own: heaps created afterwards never receive them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cases.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"
#include "support.h"

namespace reheap::snaptest {
namespace {

std::size_t open_fds() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// The mappings inside the zone (others belong to the C library's or a sanitizer's allocator,
// which map more as the process's own use grows).
std::vector<std::string> zone_mappings() {
  const ZoneStats zone = Zone::stats();
  std::ifstream maps("/proc/self/maps");
  std::vector<std::string> lines;
  for (std::string line; std::getline(maps, line);) {
    const std::uintptr_t begin = std::stoull(line, nullptr, 16);
    if (begin >= zone.base && begin < zone.base + zone.size) lines.push_back(line);
  }
  return lines;
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

TEST(SnapshotLifecycle, RestoreAttachSaveCyclesLeakNothing) {
  const Case& c = find_case("gens");
  const std::size_t cycles = kSlowBuild ? 12 : 30;
  TempDir dir;
  std::filesystem::path latest = dir / "c0.snap";
  std::uint64_t expected = 0;
  {
    HeapPtr heap = Heap::create();
    build_in(*heap, c, 91);
    expected = digest_of(*heap, c);
    Snapshotter(*heap).save(latest);
  }
  const ZoneUse zone_before = zone_use();
  std::size_t fds_warm = 0;
  std::vector<std::string> maps_warm;
  for (std::size_t i = 1; i <= cycles; ++i) {
    SCOPED_TRACE("cycle " + std::to_string(i));
    HeapPtr heap = restore(latest);
    ASSERT_EQ(digest_of(*heap, c), expected);
    {
      Snapshotter snapshotter(*heap);
      snapshotter.attach(latest);
      mutate_in(*heap, c, i);
      expected = digest_of(*heap, c);
      latest = dir / (std::string("c").append(std::to_string(i)).append(".snap"));
      snapshotter.save_increment(latest);
    }
    if (i % 10 == 0) {  // keep the chain short: fold it, and continue from the folded file
      const auto folded = dir / ("folded" + std::to_string(i) + ".snap");
      compact(latest, folded);
      latest = folded;
    }
    heap.reset();
    EXPECT_EQ(zone_use(), zone_before);
    if (i == 2) {  // the first cycles open what the process keeps (userfaultfd, pagemap)
      fds_warm = open_fds();
      maps_warm = zone_mappings();
    }
  }
  EXPECT_EQ(open_fds(), fds_warm) << "file descriptors leak per cycle";
  const std::vector<std::string> maps_now = zone_mappings();
  EXPECT_LE(maps_now.size(), maps_warm.size() + 4)
      << "mappings in the zone pile up per cycle; after cycle 2:\n" << join(maps_warm) << "now:\n"
      << join(maps_now);
  HeapPtr heap = restore(latest);
  EXPECT_EQ(digest_of(*heap, c), expected);
}

TEST(SnapshotLifecycle, RestoredHeapsChunksAreNotGivenToOtherHeaps) {
  const Case& c = find_case("huge");
  TempDir dir;
  std::uint64_t digest = 0;
  {
    HeapPtr heap = Heap::create();
    build_in(*heap, c, 92);
    digest = digest_of(*heap, c);
    Snapshotter(*heap).save(dir / "h.snap");
  }
  HeapPtr restored = restore(dir / "h.snap");
  std::vector<HeapPtr> others;
  for (int i = 0; i < 3; ++i) {
    others.push_back(Heap::create());
    HeapScope scope(*others.back());
    for (std::size_t n : {std::size_t{48}, std::size_t{9000}, std::size_t{300} << 10,
                          std::size_t{8} << 20, std::size_t{70} << 20}) {
      auto* p = new unsigned char[n];
      ASSERT_EQ(Heap::owner_of(p), others.back().get());
      fill_words(p, n, static_cast<std::uint64_t>(i));
    }
  }
  EXPECT_EQ(digest_of(*restored, c), digest) << "another heap wrote into the restored heap";
  mutate_in(*restored, c, 3);
  for (const HeapPtr& h : others) EXPECT_NE(Heap::owner_of(h->root()), restored.get());
}

}  // namespace
}  // namespace reheap::snaptest
