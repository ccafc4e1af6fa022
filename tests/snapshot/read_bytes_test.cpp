// read_snapshot_bytes: a few of a heap's bytes read from its snapshot file, through a chain of
// increments, without restoring it; only the runs that hold them are read and checked.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "reheap/snapshot_file.h"
#include "support.h"

namespace reheap::snaptest {
namespace {

constexpr std::array<unsigned char, 64> kZeros{};

std::array<unsigned char, 64> read_at(const std::filesystem::path& file, const void* address) {
  std::array<unsigned char, 64> out{};
  read_snapshot_bytes(file, reinterpret_cast<std::uintptr_t>(address), out.data(), out.size());
  return out;
}

std::array<unsigned char, 64> bytes_of(const void* p) {
  std::array<unsigned char, 64> out{};
  std::memcpy(out.data(), p, out.size());
  return out;
}

// The first data run's offset and length in `file`.
PageRun first_data_run(const std::filesystem::path& file, std::uintptr_t containing) {
  SnapshotReader reader(file);
  PageRun run;
  while (reader.next(run)) {
    if (!run.zero) {
      const std::uintptr_t end = run.address + std::uintptr_t{run.pages} * reader.header().page_size;
      if (containing >= run.address && containing < end) return run;
      reader.skip_data();
    }
  }
  return PageRun{};
}

void flip_byte(const std::filesystem::path& file, std::uint64_t offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5a);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
}

TEST(ReadSnapshotBytes, ReadsObjectsAsSavedThroughAChainOfIncrements) {
  TempDir dir;
  HeapPtr heap = Heap::create();
  auto* small = static_cast<unsigned char*>(heap->allocate(64));
  auto* large = static_cast<unsigned char*>(heap->allocate(256 * 1024));  // a page run
  for (int i = 0; i < 64; ++i) small[i] = static_cast<unsigned char>(i);
  std::memset(large, 0x11, 256 * 1024);
  Snapshotter snapshotter(*heap);
  snapshotter.save(dir / "full.snap");
  const auto small_then = bytes_of(small);
  const auto large_then = bytes_of(large + 128 * 1024);

  std::memset(small, 0x77, 64);
  std::memset(large + 128 * 1024, 0, 4096);  // a page that becomes all zero
  snapshotter.save_increment(dir / "inc1.snap");
  const auto small_now = bytes_of(small);

  EXPECT_EQ(read_at(dir / "full.snap", small), small_then);
  EXPECT_EQ(read_at(dir / "full.snap", large + 128 * 1024), large_then);
  EXPECT_EQ(read_at(dir / "inc1.snap", small), small_now);
  EXPECT_EQ(read_at(dir / "inc1.snap", large + 128 * 1024), kZeros);
  // The heap's root and anything else not written since come through from the full snapshot.
  EXPECT_EQ(read_at(dir / "inc1.snap", large), bytes_of(large));
}

TEST(ReadSnapshotBytes, BytesOutsideTheHeapsChunksReadAsZero) {
  TempDir dir;
  HeapPtr heap = Heap::create();
  auto* p = static_cast<unsigned char*>(heap->allocate(64));
  std::memset(p, 0xab, 64);
  Snapshotter(*heap).save(dir / "s.snap");
  HeapPtr other = Heap::create();
  auto* q = static_cast<unsigned char*>(other->allocate(64));
  std::memset(q, 0xcd, 64);
  EXPECT_EQ(read_at(dir / "s.snap", q), kZeros) << "another heap's bytes";
  std::array<unsigned char, 2> wrapping{};
  EXPECT_THROW(read_snapshot_bytes(dir / "s.snap", UINTPTR_MAX, wrapping.data(), wrapping.size()), SnapshotError);
}

TEST(ReadSnapshotBytes, ChecksTheRunItReadsAndNotTheOthers) {
  TempDir dir;
  HeapPtr heap = Heap::create();
  auto* small = static_cast<unsigned char*>(heap->allocate(64));
  auto* large = static_cast<unsigned char*>(heap->allocate(256 * 1024));
  std::memset(small, 0x22, 64);
  std::memset(large, 0x33, 256 * 1024);
  Snapshotter(*heap).save(dir / "s.snap");
  const PageRun small_run = first_data_run(dir / "s.snap", reinterpret_cast<std::uintptr_t>(small));
  const PageRun large_run = first_data_run(dir / "s.snap", reinterpret_cast<std::uintptr_t>(large));
  ASSERT_NE(small_run.pages, 0u);
  ASSERT_NE(large_run.pages, 0u);
  ASSERT_NE(small_run.address, large_run.address) << "the test needs the two in different runs";
  // Damage the large run's data: reading the small object still works (its run is intact, and
  // the damaged data is never read); reading the large one is refused, naming the damage.
  flip_byte(dir / "s.snap", large_run.offset + 4096 * 3 + 17);
  EXPECT_EQ(read_at(dir / "s.snap", small), bytes_of(small));
  try {
    read_at(dir / "s.snap", large);
    FAIL() << "a damaged run was read without complaint";
  } catch (const SnapshotError& e) {
    EXPECT_EQ(e.code(), SnapshotErrc::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("checksum mismatch"), std::string::npos) << e.what();
  }
  EXPECT_THROW(verify_snapshot(dir / "s.snap"), SnapshotError);
}

TEST(ReadSnapshotBytes, ATruncatedFileIsRefused) {
  TempDir dir;
  HeapPtr heap = Heap::create();
  auto* p = static_cast<unsigned char*>(heap->allocate(64));
  std::memset(p, 0x44, 64);
  Snapshotter(*heap).save(dir / "s.snap");
  std::filesystem::resize_file(dir / "s.snap", std::filesystem::file_size(dir / "s.snap") - 100);
  EXPECT_THROW(read_at(dir / "s.snap", p), SnapshotError);
}

}  // namespace
}  // namespace reheap::snaptest
