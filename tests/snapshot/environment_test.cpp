// The environment a snapshot meets: a process whose program is laid out differently (ASLR on), a
// zone of another size, a heap that is still alive, a limit too small, a chain with a missing or
// foreign parent, a full disk, a destroyed heap. Each is refused with its own code and a message
// naming the file; a refused restore leaves the zone as it was and the live heap untouched; a
// failed save leaves the previous file intact and loses no tracked write.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "cases.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"
#include "support.h"
#include "write_tracking_support.h"

namespace reheap::snaptest {
namespace {

constexpr std::size_t MiB = 1024 * 1024;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return s;
}

bool names(const Outcome& o, const std::string& file) { return o.what.find(file) != std::string::npos; }

TEST(SnapshotEnvironment, SavedWithAslrOnIsALayoutMismatch) {
  REQUIRE_LAYOUT_STABLE();
  std::ifstream knob("/proc/sys/kernel/randomize_va_space");
  int randomize = 0;
  if (knob >> randomize && randomize == 0) {
    GTEST_SKIP() << "this machine has ASLR off system-wide (kernel.randomize_va_space = 0)";
  }
  TempDir dir;
  const auto file = dir / "aslr.snap";
  const ChildResult child = run_self({"--save-helper", "map", file.string(), "51"}, {.keep_aslr = true});
  ASSERT_TRUE(child.succeeded()) << child.describe();
  ASSERT_EQ(child.output.rfind("digest ", 0), 0u) << child.output;
  const std::uint64_t digest = parse_hex(child.output.substr(7, 16));
  const SnapshotHeader header = read_snapshot_header(file);
  // With randomisation on, the helper landing at this process's addresses is improbable enough
  // that it means the helper ran with ASLR off after all.
  ASSERT_FALSE(layout_difference(header.layout, current_program_layout(), LayoutCheck::kStrict).empty())
      << "the helper started with ASLR on was loaded at this process's addresses";
  { HeapPtr warm = Heap::create(); }  // the zone is reserved, as in a program that runs heaps
  const ZoneUse before = zone_use();
  const Outcome strict = attempt([&] { HeapPtr h = restore(file, {.layout = LayoutCheck::kStrict}); });
  EXPECT_TRUE(strict.failed_with(SnapshotErrc::kLayoutMismatch)) << strict.describe();
  EXPECT_TRUE(names(strict, "aslr.snap")) << strict.what;
  EXPECT_NE(lower(strict.what).find("aslr"), std::string::npos)
      << "the message should point at ASLR as the likely cause: " << strict.what;
  EXPECT_EQ(zone_use(), before);
  const Outcome exe = attempt([&] { HeapPtr h = restore(file, {.layout = LayoutCheck::kExecutableOnly}); });
  EXPECT_TRUE(exe.failed_with(SnapshotErrc::kLayoutMismatch)) << exe.describe();
  EXPECT_EQ(zone_use(), before);

  // Unchecked, the heap comes back; its plain data (no pointers into the program) is right.
  HeapPtr heap = restore(file, {.layout = LayoutCheck::kNone});
  EXPECT_EQ(digest_of(*heap, find_case("map")), digest);
}

TEST(SnapshotEnvironment, SavedWithAnotherZoneIsAZoneMismatch) {
  TempDir dir;
  const auto file = dir / "zone.snap";
  { HeapPtr warm = Heap::create(); }  // reserve our zone first: restore must not choose it
  const ZoneStats zone = Zone::stats();
  const std::string half = "REHEAP_ZONE_SIZE=" + std::to_string(zone.size / 2);
  const std::string base = "REHEAP_ZONE_BASE=" + std::to_string(zone.base);
  const ChildResult child = run_self({"--save-helper", "map", file.string(), "52"},
                                     {.extra_env = {half, base}});
  ASSERT_TRUE(child.succeeded()) << child.describe();
  ASSERT_EQ(read_snapshot_header(file).zone_size, zone.size / 2);
  const ZoneUse before = zone_use();
  const Outcome o = attempt([&] { HeapPtr h = restore(file, {.layout = LayoutCheck::kNone}); });
  EXPECT_TRUE(o.failed_with(SnapshotErrc::kZoneMismatch)) << o.describe();
  EXPECT_TRUE(names(o, "zone.snap")) << o.what;
  EXPECT_EQ(zone_use(), before);

  // A process whose zone is not reserved yet takes the snapshot's zone instead.
  REQUIRE_LAYOUT_STABLE();
  const std::uint64_t digest = parse_hex(child.output.substr(7, 16));
  const ChildResult fresh = run_self({"--restore-helper", "map", file.string(), hex(digest)});
  EXPECT_TRUE(fresh.succeeded()) << fresh.describe();
}

TEST(SnapshotEnvironment, RestoringAHeapThatIsStillAliveIsRangeInUse) {
  const Case& c = find_case("huge");
  TempDir dir;
  const auto file = dir / "alive.snap";
  HeapPtr heap = Heap::create();
  build_in(*heap, c, 53);
  const std::uint64_t digest = digest_of(*heap, c);
  Snapshotter(*heap).save(file);
  const ZoneUse before = zone_use();
  const Outcome o = attempt([&] { HeapPtr h = restore(file); });
  EXPECT_TRUE(o.failed_with(SnapshotErrc::kRangeInUse)) << o.describe();
  EXPECT_TRUE(names(o, "alive.snap")) << o.what;
  EXPECT_EQ(zone_use(), before);
  EXPECT_EQ(digest_of(*heap, c), digest) << "the refused restore touched the live heap";
  mutate_in(*heap, c, 1);  // and it still allocates and frees
  EXPECT_NE(digest_of(*heap, c), digest);
  heap.reset();
  HeapPtr back = restore(file);
  EXPECT_EQ(digest_of(*back, c), digest);
}

// The first chunk is free but a later one is not: the restore may have taken chunks already when
// it finds out, and must give them all back.
TEST(SnapshotEnvironment, RangeInUseOnALaterChunkLeavesNothingBehind) {
  // The placement below holds in a zone no heap has used yet, as when ctest runs this test alone.
  // Run after other tests in one process, the test runs again in a process of its own.
  if (Zone::reserved() && std::getenv("REHEAP_TEST_FRESH_ZONE") == nullptr) {
    const ChildResult child = run_self(
        {"--gtest_filter=SnapshotEnvironment.RangeInUseOnALaterChunkLeavesNothingBehind"},
        {.extra_env = {"REHEAP_TEST_FRESH_ZONE=1"}});
    EXPECT_TRUE(child.succeeded()) << child.describe();
    return;
  }
  const Case& c = find_case("huge");
  TempDir dir;
  const auto file = dir / "later.snap";
  HeapPtr placeholder = Heap::create();  // reserves the zone before the quarantine changes
  // A chunk given back is free at once, so that the other heap below is placed where the two
  // heaps were: its first chunk is the placeholder's, its huge block lands in the saved heap's.
  const QuarantineLength no_quarantine(0);
  const NoHeapCache no_cache;
  std::uint64_t digest = 0;
  {
    HeapPtr saved = Heap::create();
    build_in(*saved, c, 58);
    digest = digest_of(*saved, c);
    Snapshotter(*saved).save(file);
  }
  placeholder.reset();
  HeapPtr other = Heap::create();
  auto* big = static_cast<unsigned char*>(other->allocate(8 * MiB));
  ASSERT_NE(big, nullptr);
  fill_words(big, 8 * MiB, 3);
  const SnapshotHeader header = read_snapshot_header(file);
  auto chunk_of = [&](const void* p) {
    return (reinterpret_cast<std::uintptr_t>(p) - header.zone_base) / header.chunk_size;
  };
  auto listed = [&](std::size_t index) {
    return std::any_of(header.chunks.begin(), header.chunks.end(),
                       [&](const SnapshotChunk& ch) { return ch.index == index; });
  };
  const std::size_t first = (header.heap_id - 1);
  ASSERT_FALSE(listed(chunk_of(other->allocate(16))))
      << "the other heap took the saved heap's first chunk";
  ASSERT_TRUE(listed(chunk_of(big))) << "the other heap's huge block is not in a saved chunk";
  const ZoneUse before = zone_use();
  const Outcome o = attempt([&] { HeapPtr h = restore(file); });
  EXPECT_TRUE(o.failed_with(SnapshotErrc::kRangeInUse)) << o.describe();
  EXPECT_EQ(zone_use(), before) << to_string(zone_use()) << " vs " << to_string(before);
  EXPECT_EQ(Heap::owner_of(reinterpret_cast<void*>(header.zone_base + first * header.chunk_size)),
            nullptr)
      << "the saved heap's first chunk is still taken after the refused restore";
  EXPECT_TRUE(words_intact(big, 8 * MiB, 3)) << "the refused restore wrote into the other heap";
  other.reset();
  HeapPtr back = restore(file);
  EXPECT_EQ(digest_of(*back, c), digest);
}

TEST(SnapshotEnvironment, HeapLargerThanTheLimitIsOverLimit) {
  TempDir dir;
  const auto file = dir / "big.snap";
  std::size_t committed = 0;
  {
    HeapPtr heap = Heap::create();
    build_in(*heap, find_case("huge"), 54);
    committed = heap->stats().committed_bytes;
    Snapshotter(*heap).save(file);
  }
  const ZoneUse before = zone_use();
  const Outcome o = attempt([&] { HeapPtr h = restore(file, {.limit_bytes = committed - 1}); });
  EXPECT_TRUE(o.failed_with(SnapshotErrc::kOverLimit)) << o.describe();
  EXPECT_TRUE(names(o, "big.snap")) << o.what;
  const Outcome tiny = attempt([&] { HeapPtr h = restore(file, {.limit_bytes = 1}); });
  EXPECT_TRUE(tiny.failed_with(SnapshotErrc::kOverLimit)) << tiny.describe();
  EXPECT_EQ(zone_use(), before);
  HeapPtr heap = restore(file, {.limit_bytes = committed});
  EXPECT_EQ(heap->limit(), kUnlimited) << "the restored heap keeps the limit it was saved with";
}

TEST(SnapshotEnvironment, ChainWithAMissingOrForeignParentIsBroken) {
  const Case& c = find_case("gens");
  TempDir dir;
  const auto base = dir / "base.snap", inc1 = dir / "inc1.snap", inc2 = dir / "inc2.snap";
  std::uint64_t d1 = 0, d2 = 0;
  {
    HeapPtr heap = Heap::create();
    build_in(*heap, c, 55);
    Snapshotter snapshotter(*heap);
    REQUIRE_TRACKING_BY(snapshotter);
    snapshotter.save(base);
    mutate_in(*heap, c, 1);
    d1 = digest_of(*heap, c);
    snapshotter.save_increment(inc1);
    mutate_in(*heap, c, 2);
    d2 = digest_of(*heap, c);
    snapshotter.save_increment(inc2);
  }
  const ZoneUse before = zone_use();
  const auto aside = dir / "aside";
  std::filesystem::rename(inc1, aside);
  Outcome o = attempt([&] { HeapPtr h = restore(inc2); });
  EXPECT_TRUE(o.failed_with(SnapshotErrc::kBrokenChain)) << o.describe();
  EXPECT_TRUE(names(o, "inc1.snap")) << "the message should name the missing parent: " << o.what;
  o = attempt([&] { snapshot_chain(inc2); });
  EXPECT_TRUE(o.failed_with(SnapshotErrc::kBrokenChain)) << o.describe();
  EXPECT_EQ(zone_use(), before);

  std::filesystem::copy_file(base, inc1);  // a snapshot, but not the one inc2 names
  o = attempt([&] { HeapPtr h = restore(inc2); });
  EXPECT_TRUE(o.failed_with(SnapshotErrc::kBrokenChain)) << o.describe();
  o = attempt([&] { snapshot_chain(inc2); });
  EXPECT_TRUE(o.failed_with(SnapshotErrc::kBrokenChain)) << o.describe();
  EXPECT_EQ(zone_use(), before);

  std::filesystem::remove(inc1);
  std::filesystem::rename(aside, inc1);
  for (const auto& [file, digest] : {std::pair{inc1, d1}, std::pair{inc2, d2}}) {
    HeapPtr heap = restore(file);  // the chain is whole again
    EXPECT_EQ(digest_of(*heap, c), digest);
  }
  std::filesystem::remove(base);
  o = attempt([&] { HeapPtr h = restore(inc1); });
  EXPECT_TRUE(o.failed_with(SnapshotErrc::kBrokenChain)) << "missing full snapshot: " << o.describe();
  EXPECT_EQ(zone_use(), before);
}

// A sink over a file descriptor, throwing as the library's own sinks do.
class FdSink final : public ByteSink {
 public:
  FdSink(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  void write(const void* data, std::size_t size) override {
    const auto* p = static_cast<const unsigned char*>(data);
    while (size > 0) {
      const ssize_t n = ::write(fd_, p, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int e = n < 0 ? errno : ENOSPC;
        throw SnapshotError(e == ENOSPC || e == EDQUOT ? SnapshotErrc::kNoSpace : SnapshotErrc::kIo,
                            name_ + ": " + std::strerror(e));
      }
      p += n;
      size -= static_cast<std::size_t>(n);
    }
  }

 private:
  int fd_;
  std::string name_;
};

TEST(SnapshotEnvironment, FullSinkFailsWithNoSpaceAndLosesNoTrackedWrite) {
  const int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (fd < 0) GTEST_SKIP() << "this machine has no usable /dev/full: " << std::strerror(errno);
  const Case& c = find_case("gens");
  TempDir dir;
  std::uint64_t d1 = 0;
  {
    HeapPtr heap = Heap::create();
    build_in(*heap, c, 56);
    Snapshotter snapshotter(*heap);
    snapshotter.save(dir / "base.snap");
    mutate_in(*heap, c, 1);
    d1 = digest_of(*heap, c);
    FdSink sink(fd, "/dev/full");
    Outcome o = attempt([&] { snapshotter.write(sink); });
    EXPECT_TRUE(o.failed_with(SnapshotErrc::kNoSpace)) << o.describe();
    o = attempt([&] { snapshotter.write_increment(sink, "base.snap"); });
    EXPECT_TRUE(o.failed_with(SnapshotErrc::kNoSpace)) << o.describe();
    // The writes before the failures are still in the next increment.
    snapshotter.save_increment(dir / "inc.snap");
  }
  ::close(fd);
  HeapPtr heap = restore(dir / "inc.snap");
  EXPECT_EQ(digest_of(*heap, c), d1);
}

TEST(SnapshotEnvironment, FullFilesystemFailsWithNoSpaceAndKeepsThePreviousFile) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root, and this test is not root";
  TempDir dir;
  const auto mountpoint = dir / "tiny";
  std::filesystem::create_directory(mountpoint);
  // A private mount namespace: the tmpfs is this process's alone and goes away with it.
  if (::unshare(CLONE_NEWNS) != 0) GTEST_SKIP() << "unshare(CLONE_NEWNS): " << std::strerror(errno);
  ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
  if (::mount("tmpfs", mountpoint.c_str(), "tmpfs", 0, "size=4m") != 0) {
    GTEST_SKIP() << "mount tmpfs: " << std::strerror(errno);
  }
  const Case& c = find_case("map");
  const auto file = mountpoint / "s.snap";
  std::uint64_t d0 = 0, d1 = 0, id0 = 0;
  {
    HeapPtr heap = Heap::create();
    build_in(*heap, c, 57);
    d0 = digest_of(*heap, c);
    Snapshotter snapshotter(*heap);
    const Outcome first = attempt([&] { id0 = snapshotter.save(file).id; });
    if (first.kind != Outcome::Kind::kReturned) {
      ::umount2(mountpoint.c_str(), MNT_DETACH);
      FAIL() << "the small heap's snapshot no longer fits in 4 MiB: " << first.describe();
    }
    unsigned char* big = nullptr;
    {
      HeapScope scope(*heap);
      big = new unsigned char[6 * MiB];
      fill_words(big, 6 * MiB, 1);
    }
    const Outcome o = attempt([&] { snapshotter.save(file); });
    EXPECT_TRUE(o.failed_with(SnapshotErrc::kNoSpace)) << o.describe();
    EXPECT_TRUE(names(o, "s.snap")) << o.what;    std::vector<std::string> left;
    for (const auto& e : std::filesystem::directory_iterator(mountpoint)) {
      left.push_back(e.path().filename().string());
    }
    EXPECT_EQ(left, std::vector<std::string>{"s.snap"}) << "a failed save should remove its temporary file";
    const Outcome verified = attempt([&] { EXPECT_EQ(verify_snapshot(file).id, id0); });
    EXPECT_EQ(verified.kind, Outcome::Kind::kReturned) << verified.describe();
    {
      HeapScope scope(*heap);
      delete[] big;
    }
    mutate_in(*heap, c, 1);  // once there is room again, saving works and nothing is lost
    d1 = digest_of(*heap, c);
    EXPECT_NE(d1, d0);
    const Outcome again = attempt([&] { snapshotter.save(file); });
    EXPECT_EQ(again.kind, Outcome::Kind::kReturned) << again.describe();
  }
  {
    HeapPtr back = restore(file);
    EXPECT_EQ(digest_of(*back, c), d1);
  }
  ::umount2(mountpoint.c_str(), MNT_DETACH);
}

TEST(SnapshotEnvironment, SaveIntoAMissingDirectoryIsAnIoErrorAndLosesNothing) {
  const Case& c = find_case("gens");
  TempDir dir;
  std::uint64_t digest = 0;
  {
    HeapPtr heap = Heap::create();
    build_in(*heap, c, 59);
    Snapshotter snapshotter(*heap);
    snapshotter.save(dir / "base.snap");
    mutate_in(*heap, c, 1);
    Outcome o = attempt([&] { snapshotter.save_increment(dir / "no" / "such" / "dir.snap"); });
    EXPECT_TRUE(o.failed_with(SnapshotErrc::kIo)) << o.describe();
    EXPECT_TRUE(names(o, "dir.snap")) << o.what;
    o = attempt([&] { snapshotter.save(dir / "no" / "such" / "dir.snap"); });
    EXPECT_TRUE(o.failed_with(SnapshotErrc::kIo)) << o.describe();
    mutate_in(*heap, c, 2);
    digest = digest_of(*heap, c);
    snapshotter.save_increment(dir / "inc.snap");
  }
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"base.snap", "inc.snap"}));
  HeapPtr heap = restore(dir / "inc.snap");
  EXPECT_EQ(digest_of(*heap, c), digest);
}

TEST(SnapshotEnvironment, SnapshotterOfADestroyedHeapThrowsMisuse) {
  TempDir dir;
  HeapPtr heap = Heap::create();
  auto snapshotter = std::make_unique<Snapshotter>(*heap);
  heap.reset();
  Outcome o = attempt([&] { snapshotter->save(dir / "x.snap"); });
  EXPECT_TRUE(o.failed_with(SnapshotErrc::kMisuse)) << o.describe();
  o = attempt([&] { snapshotter->save_increment(dir / "x.snap"); });
  EXPECT_TRUE(o.failed_with(SnapshotErrc::kMisuse)) << o.describe();
  EXPECT_TRUE(dir.entries().empty());
  snapshotter.reset();
}

}  // namespace
}  // namespace reheap::snaptest
