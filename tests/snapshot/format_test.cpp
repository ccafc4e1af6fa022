// The file format: a saved file is laid out byte for byte as heap/SNAPSHOT_FORMAT.md says
// (preamble, header checksum, page runs with their checksums, end record, trailer with counts and
// digest), and its header describes the heap and the saving process truthfully.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "cases.h"
#include "file_format.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"
#include "support.h"

namespace reheap::snaptest {
namespace {

const std::size_t kPage = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

#if defined(REHEAP_TEST_CHECKS)
constexpr bool kChecked = true;
#else
constexpr bool kChecked = false;
#endif

TEST(SnapshotFormat, FileIsLaidOutAsDocumented) {
  TempDir dir;
  SnapshotInfo info;
  {
    HeapPtr heap = Heap::create();
    build_in(*heap, find_case("huge"), 41);  // holes, large and huge blocks, two large chunks
    info = Snapshotter(*heap).save(dir / "f.snap");
  }
  const Bytes b = read_bytes(dir / "f.snap");
  ASSERT_GE(b.size(), kPreambleBytes);
  EXPECT_EQ(std::memcmp(b.data(), "REHEAPSN", 8), 0);
  EXPECT_EQ(load_le(b, 8, 4), 2u) << "format version";
  const SnapshotFile f = decode(b, kPage);
  ASSERT_EQ(f.error, "");
  EXPECT_LE(f.header_length, 16u << 20);
  EXPECT_EQ(load_le(f.head, f.head.size() - 8, 8), xxh3(b.data(), f.head.size() - 8))
      << "header checksum: XXH3-64 of bytes [0, 16 + H)";

  std::uint64_t data_pages = 0;
  std::uintptr_t last_end = 0;
  std::size_t zero_data_pages = 0;
  for (const FileRun& r : f.runs) {
    SCOPED_TRACE("run at file offset " + std::to_string(r.at));
    EXPECT_EQ(r.address % kPage, 0u);
    EXPECT_GE(r.pages, 1u);
    EXPECT_EQ(r.flags, 0u) << "a full snapshot has data runs only";
    EXPECT_GE(r.address, last_end) << "runs ascend and do not overlap";
    last_end = r.address + std::uintptr_t{r.pages} * kPage;
    for (std::size_t i = 0; i < r.data.size(); i += kPage) {
      bool page_zero = true;
      for (std::size_t j = 0; j < kPage && page_zero; ++j) page_zero = r.data[i + j] == 0;
      zero_data_pages += page_zero ? 1 : 0;
    }
    data_pages += r.pages;
  }
  EXPECT_EQ(zero_data_pages, 0u) << "all-zero pages are holes, not data";
  for (std::size_t i = 0; i < kRunBytes; ++i) EXPECT_EQ(b[f.end_record_at + i], 0u);
  EXPECT_EQ(f.trailer_runs, f.runs.size()) << "trailer: runs";
  EXPECT_EQ(f.trailer_pages, data_pages) << "trailer: data pages";
  EXPECT_EQ(f.trailer_digest, digest_of_runs(f)) << "trailer digest";
  EXPECT_EQ(std::memcmp(b.data() + f.trailer_at + 24, "REHEAPND", 8), 0);
  EXPECT_TRUE(encode(f) == b) << "decoding and encoding again changes the file";
  EXPECT_EQ(info.pages_written, data_pages);
  EXPECT_EQ(info.bytes_written, b.size());
  EXPECT_GT(info.zero_pages, 60u * 256u) << "the zeroed sparse block is skipped as holes";
}

TEST(SnapshotFormat, HeaderDescribesTheHeapAndTheProcess) {
  TempDir dir;
  HeapPtr heap = Heap::create();
  build_in(*heap, find_case("huge"), 42);
  heap->set_limit(1ull << 34);
  const HeapStats stats = heap->stats();
  const SnapshotInfo info = Snapshotter(*heap).save(dir / "h.snap");
  const SnapshotHeader h = verify_snapshot(dir / "h.snap");
  const ZoneStats zone = Zone::stats();
  EXPECT_EQ(h.format_version, 2u);
  EXPECT_EQ(h.kind, SnapshotKind::kFull);
  EXPECT_EQ(h.id, info.id);
  EXPECT_NE(h.id, 0u);
  EXPECT_EQ(h.parent_id, 0u);
  EXPECT_EQ(h.generation, 1u);
  EXPECT_GT(h.created_unix_ns, 1'600'000'000ull * 1'000'000'000ull);
  EXPECT_EQ(h.page_size, kPage);
  EXPECT_EQ(h.chunk_size, zone.chunk_size);
  EXPECT_EQ(h.zone_base, zone.base);
  EXPECT_EQ(h.zone_size, zone.size);
  EXPECT_EQ(h.checked_build, kChecked);
  EXPECT_EQ(h.heap_id, heap->id());
  EXPECT_EQ(h.root, reinterpret_cast<std::uintptr_t>(heap->root()));
  EXPECT_EQ(h.limit_bytes, std::size_t{1} << 34);
  EXPECT_EQ(h.committed_bytes, stats.committed_bytes);
  std::size_t class_chunks = 0, other_chunks = 0;
  for (std::size_t i = 0; i < h.chunks.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(h.chunks[i - 1].index, h.chunks[i].index) << "chunks ascend";
    }
    (h.chunks[i].use == ChunkUse::kClass ? class_chunks : other_chunks) += 1;
    EXPECT_FALSE(h.chunks[i].fresh);
  }
  EXPECT_EQ(class_chunks, stats.class_chunks);
  EXPECT_EQ(other_chunks, stats.large_chunks);
  std::uint64_t pages = h.pages.large + h.pages.huge + h.pages.metadata;
  for (std::uint64_t n : h.pages.by_class) pages += n;
  EXPECT_EQ(pages, info.pages_written) << "pages by kind add up";
  EXPECT_GT(h.pages.huge, 0u);
  EXPECT_GT(h.pages.large, 0u);
  EXPECT_GT(h.pages.metadata, 0u);
  const ProgramLayout now = current_program_layout();
  ASSERT_FALSE(h.layout.empty());
  EXPECT_TRUE(h.layout.front().main_executable);
  EXPECT_EQ(h.layout.front().path, now.front().path);
  EXPECT_EQ(h.layout.front().base, now.front().base);
  EXPECT_EQ(layout_difference(h.layout, now, LayoutCheck::kStrict), "");
  EXPECT_EQ(h.tracking, info.tracking);
  EXPECT_EQ(read_snapshot_header(dir / "h.snap").id, h.id);
  EXPECT_EQ(snapshot_chain(dir / "h.snap"), std::vector<std::filesystem::path>{dir / "h.snap"});
}

TEST(SnapshotFormat, ReaderYieldsThePagesOfTheLiveHeap) {
  TempDir dir;
  HeapPtr heap = Heap::create();
  build_in(*heap, find_case("map"), 43);
  const SnapshotInfo info = Snapshotter(*heap).save(dir / "r.snap");
  SnapshotReader reader(dir / "r.snap");
  EXPECT_EQ(reader.header().id, info.id);
  EXPECT_EQ(reader.size(), info.bytes_written);
  PageRun run;
  std::uint64_t pages = 0;
  std::uint64_t last_position = reader.position();
  std::size_t differing_runs = 0;
  while (reader.next(run)) {
    EXPECT_FALSE(run.zero);
    std::vector<unsigned char> data(std::size_t{run.pages} * kPage);
    reader.read_data(data.data());
    differing_runs += std::memcmp(data.data(), reinterpret_cast<const void*>(run.address), data.size()) != 0;
    pages += run.pages;
    EXPECT_GT(reader.position(), last_position);
    last_position = reader.position();
  }
  EXPECT_EQ(differing_runs, 0u) << "the file's pages are the heap's pages (nothing changed since)";
  EXPECT_EQ(pages, info.pages_written);
  EXPECT_EQ(reader.position(), reader.size());
}

TEST(SnapshotFormat, ReaderChecksEachRunAndInsistsOnConsumingIt) {
  TempDir dir;
  {
    HeapPtr heap = Heap::create();
    build_in(*heap, find_case("map"), 44);
    Snapshotter(*heap).save(dir / "r.snap");
  }
  Bytes bytes = read_bytes(dir / "r.snap");
  const SnapshotFile f = decode(bytes, kPage);
  ASSERT_EQ(f.error, "");
  bytes[f.runs[1].data_at + 100] ^= 4;
  write_bytes(dir / "bad.snap", bytes);
  {
    SnapshotReader reader(dir / "bad.snap");
    PageRun run;
    ASSERT_TRUE(reader.next(run));
    reader.skip_data();
    ASSERT_TRUE(reader.next(run));
    const Outcome o = attempt([&] { reader.skip_data(); });
    EXPECT_TRUE(o.failed_with(SnapshotErrc::kCorrupt)) << "skip_data checks the run: " << o.describe();
  }
  SnapshotReader reader(dir / "r.snap");
  PageRun run;
  ASSERT_TRUE(reader.next(run));
  const Outcome o = attempt([&] { reader.next(run); });
  EXPECT_TRUE(o.failed_with(SnapshotErrc::kMisuse)) << "next() before the data was consumed: "
                                                    << o.describe();
}

TEST(SnapshotFormat, ErrorCodesHaveNames) {
  for (SnapshotErrc code : {SnapshotErrc::kIo, SnapshotErrc::kNoSpace, SnapshotErrc::kTruncated,
                            SnapshotErrc::kCorrupt, SnapshotErrc::kNotASnapshot,
                            SnapshotErrc::kUnsupportedVersion, SnapshotErrc::kLayoutMismatch,
                            SnapshotErrc::kZoneMismatch, SnapshotErrc::kRangeInUse,
                            SnapshotErrc::kOverLimit, SnapshotErrc::kBrokenChain,
                            SnapshotErrc::kMisuse}) {
    const std::string name = to_string(code);
    EXPECT_FALSE(name.empty());
    EXPECT_EQ(name.find(' '), std::string::npos) << name;
  }
  EXPECT_STREQ(to_string(SnapshotErrc::kCorrupt), "corrupt");
}

}  // namespace
}  // namespace reheap::snaptest
