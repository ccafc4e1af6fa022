// reheap-snap: the command-line tool, run as a separate process on snapshots these tests write.
// Each test states one promise of the tool: info reports the header's counts and verifies the
// whole file (or says it did not), verify accepts a good file and rejects (exit 1) a flipped bit
// or a truncation, diff finds exactly the pages and bytes that were changed and the blocks they
// lie in, compact of a chain restores to the latest state, and --json is valid JSON.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reheap/heap.h"
#include "json_reader.h"  // the strict parser checking --json output
#include "reheap/snapshot.h"
#include "tool_runner.h"
#include "write_tracking_support.h"

namespace reheap {
namespace {

namespace fs = std::filesystem;

using snap::Json;
using snap::JsonParser;

using snaptest::run_tool;
using snaptest::ToolResult;

Json parse_or_fail(const std::string& text) {
  std::optional<Json> json = JsonParser(text).document();
  EXPECT_TRUE(json.has_value()) << "not valid JSON:\n" << text;
  return json.value_or(Json{});
}

std::string address_hex(std::uintptr_t address) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(address));
  return text;
}

// Fills `bytes` at `p` with a non-zero pattern depending on `seed`.
void fill(void* p, std::size_t bytes, unsigned seed) {
  auto* b = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; ++i) b[i] = static_cast<unsigned char>((i * 31 + seed) | 1);
}

class ReheapSnap : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef REHEAP_SNAP_PATH
    GTEST_SKIP() << "reheap-snap is not built (REHEAP_BUILD_TOOLS=OFF)";
#endif
    std::string pattern = (fs::temp_directory_path() / "reheap-snap-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    snapshotter_.reset();  // before its heap
    heap_.reset();
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  Heap& make_heap() {
    heap_ = Heap::create();
    snapshotter_ = std::make_unique<Snapshotter>(*heap_);
    return *heap_;
  }
  // Destroys the heap (and its snapshotter) so that a snapshot of it can be restored here.
  void drop_heap() {
    snapshotter_.reset();
    heap_.reset();
  }
  // A full snapshot by a new Snapshotter: a first save, which write tracking has not touched.
  // The diff tests use it so that they test diff whatever becomes of
  // VerifyAcceptsASecondFullSaveAfterWrites.
  void save_untracked(const char* name) {
    snapshotter_.reset();
    snapshotter_ = std::make_unique<Snapshotter>(*heap_);
    snapshotter_->save(path(name));
  }
  std::string path(const char* name) const { return (dir_ / name).string(); }

  fs::path dir_;
  HeapPtr heap_;
  std::unique_ptr<Snapshotter> snapshotter_;
};

// Copies `from` to `to` with one bit of the byte at `offset` flipped: a damaged page or header.
void copy_with_a_bit_flipped(const fs::path& from, const fs::path& to, std::uintmax_t offset) {
  fs::copy_file(from, to);
  std::fstream file(to, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(static_cast<std::streamoff>(offset));
  const char c = static_cast<char>(file.get());
  file.seekp(static_cast<std::streamoff>(offset));
  file.put(static_cast<char>(c ^ 0x10));
}

TEST_F(ReheapSnap, UsageErrorsExitTwoAndHelpDocumentsExitCodes) {
  EXPECT_EQ(run_tool({}).exit_code, 2);
  EXPECT_EQ(run_tool({"frobnicate", "x"}).exit_code, 2);
  EXPECT_EQ(run_tool({"info"}).exit_code, 2);
  EXPECT_EQ(run_tool({"info", "a", "b"}).exit_code, 2);
  EXPECT_EQ(run_tool({"diff", "a"}).exit_code, 2);
  EXPECT_EQ(run_tool({"info", "--frob", "a"}).exit_code, 2);
  EXPECT_EQ(run_tool({"info", "--chain", "a"}).exit_code, 2);
  const ToolResult help = run_tool({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("Exit codes"), std::string::npos);
  EXPECT_EQ(run_tool({"info", path("missing.snap")}).exit_code, 3);
}

// `replay` takes a crash bundle, a directory: anything else given as one is named for what it
// is, without blocking; --timeout is a number of seconds it can keep.
TEST_F(ReheapSnap, ReplayRefusesWhatIsNotABundleDirectoryByItsType) {
  const std::string fifo = path("bundle-fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const ToolResult from_fifo = run_tool({"replay", fifo}, std::chrono::milliseconds(10000));
  EXPECT_FALSE(from_fifo.timed_out);
  EXPECT_EQ(from_fifo.exit_code, 3) << from_fifo.err;
  EXPECT_NE(from_fifo.err.find(fifo + ": is a FIFO, not a crash bundle (a crash-<event>/ directory)"),
            std::string::npos)
      << from_fifo.err;
  const ToolResult from_device = run_tool({"replay", "/dev/zero"}, std::chrono::milliseconds(10000));
  EXPECT_EQ(from_device.exit_code, 3) << from_device.err;
  EXPECT_NE(from_device.err.find("/dev/zero: is a character device, not a crash bundle"), std::string::npos)
      << from_device.err;
  EXPECT_EQ(run_tool({"replay", dir_.string(), "--timeout", "0"}).exit_code, 2);
  const ToolResult too_long = run_tool({"replay", dir_.string(), "--timeout", "4294967295"});
  EXPECT_EQ(too_long.exit_code, 2);
  EXPECT_NE(too_long.err.find("--timeout needs a number of seconds from 1 to 1000000"), std::string::npos)
      << too_long.err;
}

TEST_F(ReheapSnap, InfoReportsChunksAndPagesOfTheHeader) {
  Heap& heap = make_heap();
  for (int i = 0; i < 300; ++i) fill(heap.allocate(32), 32, 1);   // class 2: 32 B
  for (int i = 0; i < 5; ++i) fill(heap.allocate(4096), 4096, 2);  // class 16: 4 KiB
  fill(heap.allocate(100 * 1024), 100 * 1024, 3);                  // a large page run
  fill(heap.allocate(3 << 20), 3 << 20, 4);                        // a huge block
  *static_cast<const char**>(heap.allocate(8)) = "a literal for reheap-snap info";  // a program ref
  const HeapStats stats = heap.stats();
  snapshotter_->save(path("a.snap"));
  const SnapshotHeader header = read_snapshot_header(path("a.snap"));

  const ToolResult result = run_tool({"info", path("a.snap"), "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const Json json = parse_or_fail(result.out);
  EXPECT_EQ(json["kind"].text, "full");
  EXPECT_EQ(json["heap_id"].number, heap.id());
  EXPECT_EQ(json["chunk_counts"]["total"].number, header.chunks.size());
  EXPECT_EQ(json["chunk_counts"]["total"].number, stats.class_chunks + stats.large_chunks);
  EXPECT_EQ(json["chunk_counts"]["class"].number, stats.class_chunks);
  EXPECT_GE(json["chunk_counts"]["huge"].number, 1u);
  EXPECT_EQ(json["chunks"].items.size(), header.chunks.size());
  const Json& by_class = json["pages"]["by_class"];
  ASSERT_EQ(by_class.items.size(), kNumClasses);
  for (unsigned c = 0; c < kNumClasses; ++c) {
    EXPECT_EQ(by_class[c]["block_size"].number, kClassSize[c]);
    EXPECT_EQ(by_class[c]["pages"].number, header.pages.by_class[c]) << "class " << c;
  }
  // 300 blocks of 32 B fill three pages; five 4 KiB blocks five pages.
  EXPECT_EQ(by_class[2]["pages"].number, 3u);
  EXPECT_EQ(by_class[16]["pages"].number, 5u);
  EXPECT_EQ(json["pages"]["large"].number, header.pages.large);
  EXPECT_GE(json["pages"]["large"].number, 25u);
  EXPECT_GE(json["pages"]["huge"].number, 768u);
  EXPECT_EQ(json["pages"]["metadata"].number, header.pages.metadata);
  EXPECT_EQ(json["committed"].number, header.committed_bytes);
  EXPECT_TRUE(json["chain"]["ok"].flag);
  EXPECT_EQ(json["chain"]["files"].items.size(), 1u);
  EXPECT_FALSE(json["layout"].items.empty());
  EXPECT_TRUE(json["program_refs"]["listed"].flag);
  EXPECT_EQ(json["program_refs"]["values"].number, 1u);
  EXPECT_EQ(json["program_refs"]["literals"].number, 1u);
  EXPECT_EQ(json["saved_by_node"].number, static_cast<std::uint64_t>(header.saved_by_node));

  const ToolResult text = run_tool({"info", path("a.snap")});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("chunks      " + std::to_string(header.chunks.size()) + ":"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("chain       1 file"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("prog refs   1 values in 1 words: symbols 0, literals 1, unresolved 0"),
            std::string::npos)
      << text.out;
}

// info reads the whole file by default: a file whose pages or trailer are bad is reported bad
// (exit 1, the header still printed); --header-only says it did not look (exit 4).
TEST_F(ReheapSnap, InfoVerifiesTheWholeFileOrSaysItDidNot) {
  Heap& heap = make_heap();
  fill(heap.allocate(512 * 1024), 512 * 1024, 19);
  snapshotter_->save(path("good.snap"));
  const auto size = fs::file_size(path("good.snap"));
  copy_with_a_bit_flipped(path("good.snap"), path("flipped.snap"), size / 2);
  fs::copy_file(path("good.snap"), path("short.snap"));
  fs::resize_file(path("short.snap"), size - 8);  // the trailer's digest is cut

  const ToolResult good = run_tool({"info", path("good.snap")});
  EXPECT_EQ(good.exit_code, 0) << good.out << good.err;
  EXPECT_NE(good.out.find("verified    ok"), std::string::npos) << good.out;

  const ToolResult flipped = run_tool({"info", path("flipped.snap")});
  EXPECT_EQ(flipped.exit_code, 1) << flipped.out << flipped.err;
  EXPECT_NE(flipped.out.find("kind        full"), std::string::npos) << flipped.out;
  EXPECT_NE(flipped.out.find("verified    bad: corrupt"), std::string::npos) << flipped.out;
  EXPECT_NE(flipped.err.find("corrupt"), std::string::npos) << flipped.err;

  const ToolResult truncated = run_tool({"info", "--json", path("short.snap")});
  EXPECT_EQ(truncated.exit_code, 1) << truncated.out << truncated.err;
  const Json t = parse_or_fail(truncated.out);
  EXPECT_TRUE(t["verified"]["checked"].flag);
  EXPECT_FALSE(t["verified"]["ok"].flag);
  EXPECT_EQ(t["verified"]["error"].text, to_string(SnapshotErrc::kTruncated));

  // Header only: exit 4 and "not verified", even for a bad file, in text and JSON.
  for (const char* name : {"good.snap", "flipped.snap"}) {
    const ToolResult quick = run_tool({"info", "--header-only", path(name)});
    EXPECT_EQ(quick.exit_code, 4) << quick.out << quick.err;
    EXPECT_NE(quick.err.find("not verified: "), std::string::npos) << quick.err;
    EXPECT_NE(quick.out.find("verified    not verified"), std::string::npos) << quick.out;
  }
  const ToolResult quick_json = run_tool({"info", "--header-only", "--json", path("good.snap")});
  EXPECT_EQ(quick_json.exit_code, 4);
  const Json q = parse_or_fail(quick_json.out);
  EXPECT_FALSE(q["verified"]["checked"].flag);
  EXPECT_EQ(q["kind"].text, "full");
  const ToolResult good_json = run_tool({"info", "--json", path("good.snap")});
  EXPECT_EQ(good_json.exit_code, 0);
  EXPECT_TRUE(parse_or_fail(good_json.out)["verified"]["ok"].flag);

  EXPECT_EQ(run_tool({"verify", "--header-only", path("good.snap")}).exit_code, 2);
  const ToolResult help = run_tool({"--help"});
  EXPECT_NE(help.out.find("4  info --header-only"), std::string::npos) << help.out;
}

TEST_F(ReheapSnap, VerifyAcceptsAGoodFileAndRejectsAFlippedBitOrATruncation) {
  Heap& heap = make_heap();
  fill(heap.allocate(512 * 1024), 512 * 1024, 5);
  snapshotter_->save(path("good.snap"));
  const ToolResult good = run_tool({"verify", path("good.snap")});
  EXPECT_EQ(good.exit_code, 0) << good.out << good.err;
  EXPECT_NE(good.out.find(": ok"), std::string::npos) << good.out;

  const auto size = fs::file_size(path("good.snap"));
  copy_with_a_bit_flipped(path("good.snap"), path("flipped.snap"), size / 2);
  const ToolResult flipped = run_tool({"verify", path("flipped.snap")});
  EXPECT_EQ(flipped.exit_code, 1) << flipped.out << flipped.err;
  EXPECT_NE(flipped.out.find(to_string(SnapshotErrc::kCorrupt)), std::string::npos)
      << flipped.out;

  fs::copy_file(path("good.snap"), path("short.snap"));
  fs::resize_file(path("short.snap"), size - 40);
  const ToolResult truncated = run_tool({"verify", path("short.snap")});
  EXPECT_EQ(truncated.exit_code, 1) << truncated.out << truncated.err;
  EXPECT_NE(truncated.out.find(to_string(SnapshotErrc::kTruncated)), std::string::npos)
      << truncated.out;
  // The file is named once per line, not again inside the message.
  EXPECT_EQ(truncated.out.find(path("short.snap")), truncated.out.rfind(path("short.snap"))) << truncated.out;

  // A flipped bit in the preamble's header length (bytes 12..15) or version (8..11): the file
  // has its full size, so the message says what else the reader cannot tell apart.
  copy_with_a_bit_flipped(path("good.snap"), path("length.snap"), 14);
  const ToolResult length = run_tool({"verify", path("length.snap")});
  EXPECT_EQ(length.exit_code, 1) << length.out << length.err;
  EXPECT_NE(length.out.find("or the length field is damaged"), std::string::npos) << length.out;
  copy_with_a_bit_flipped(path("good.snap"), path("version.snap"), 8);
  const ToolResult version = run_tool({"verify", path("version.snap")});
  EXPECT_EQ(version.exit_code, 1) << version.out << version.err;
  EXPECT_NE(version.out.find("or its preamble is damaged"), std::string::npos) << version.out;

  // One bad file among good ones fails the run; an unreadable one is an error (3).
  EXPECT_EQ(run_tool({"verify", path("good.snap"), path("short.snap")}).exit_code, 1);
  EXPECT_EQ(run_tool({"verify", path("good.snap"), path("missing.snap")}).exit_code, 3);

  const ToolResult json = run_tool({"verify", "--json", path("good.snap"), path("flipped.snap")});
  EXPECT_EQ(json.exit_code, 1);
  const Json parsed = parse_or_fail(json.out);
  EXPECT_FALSE(parsed["ok"].flag);
  ASSERT_EQ(parsed["files"].items.size(), 2u);
  EXPECT_TRUE(parsed["files"][0]["ok"].flag);
  EXPECT_FALSE(parsed["files"][1]["ok"].flag);
  EXPECT_EQ(parsed["files"][1]["error"].text, to_string(SnapshotErrc::kCorrupt));
}

// Every full snapshot a Snapshotter writes must verify, the second as well as the first: by
// then write tracking is on, and a written page that is zero again must be left out as a hole
// (a zero run is an increment's record and makes a full snapshot unreadable).
TEST_F(ReheapSnap, VerifyAcceptsASecondFullSaveAfterWrites) {
  Heap& heap = make_heap();
  auto* block = static_cast<unsigned char*>(heap.allocate(64 * kPageSize));
  ASSERT_NE(block, nullptr);
  fill(block, 64 * kPageSize, 18);
  snapshotter_->save(path("first.snap"));
  block[0] ^= 1;
  snapshotter_->save(path("second.snap"));
  const ToolResult result = run_tool({"verify", path("first.snap"), path("second.snap")});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
}

TEST_F(ReheapSnap, DiffFindsExactlyTheChangedPagesAndBytes) {
  Heap& heap = make_heap();
  constexpr std::size_t kPages = 64;
  auto* block = static_cast<unsigned char*>(heap.allocate(kPages * kPageSize));
  ASSERT_NE(block, nullptr);
  fill(block, kPages * kPageSize, 6);
  save_untracked("a.snap");
  // Page 3: one byte; page 10: five bytes; pages 20, 21, 22: one byte each.
  block[3 * kPageSize + 100] ^= 0xFF;
  for (std::size_t i = 0; i < 5; ++i) block[10 * kPageSize + 7 * i] ^= 0x01;
  for (std::size_t p = 20; p < 23; ++p) block[p * kPageSize + kPageSize - 1] ^= 0x80;
  save_untracked("b.snap");

  const ToolResult same = run_tool({"diff", path("a.snap"), path("a.snap")});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_NE(same.out.find("identical"), std::string::npos);

  const ToolResult result = run_tool({"diff", "--json", path("a.snap"), path("b.snap")});
  ASSERT_EQ(result.exit_code, 1) << result.out << result.err;
  const Json json = parse_or_fail(result.out);
  EXPECT_FALSE(json["identical"].flag);
  EXPECT_EQ(json["pages"]["changed"].number, 5u);
  EXPECT_EQ(json["pages"]["changed_bytes"].number, 9u);
  EXPECT_EQ(json["pages"]["only_a"].number, 0u);
  EXPECT_EQ(json["pages"]["only_b"].number, 0u);
  const auto page = [&](std::size_t p) {
    return address_hex(reinterpret_cast<std::uintptr_t>(block) + p * kPageSize);
  };
  const Json& ranges = json["ranges"];
  ASSERT_EQ(ranges.items.size(), 3u) << result.out;
  EXPECT_EQ(ranges[0]["begin"].text, page(3));
  EXPECT_EQ(ranges[0]["end"].text, page(4));
  EXPECT_EQ(ranges[0]["bytes"].number, 1u);
  EXPECT_EQ(ranges[1]["begin"].text, page(10));
  EXPECT_EQ(ranges[1]["bytes"].number, 5u);
  EXPECT_EQ(ranges[2]["begin"].text, page(20));
  EXPECT_EQ(ranges[2]["end"].text, page(23));
  EXPECT_EQ(ranges[2]["pages"].number, 3u);
  for (const Json& range : ranges.items) EXPECT_EQ(range["kind"].text, "changed");
}

// Every span of differing bytes a diff lists, flattened from its ranges.
std::vector<Json> diff_spans(const Json& diff) {
  std::vector<Json> spans;
  for (const Json& range : diff["ranges"].items) {
    for (const Json& span : range["spans"].items) spans.push_back(span);
  }
  return spans;
}

// The span beginning at `address`, or a null Json (and a failure) if there is none.
Json span_at(const std::vector<Json>& spans, std::uintptr_t address, const std::string& out) {
  for (const Json& span : spans) {
    if (span["begin"].text == address_hex(address)) return span;
  }
  ADD_FAILURE() << "no span at " << address_hex(address) << " in\n" << out;
  return Json{};
}

// diff names the bytes that differ (address, offset in the page) and the block each lies in:
// a class block (its address, class and offset), a page run, a huge block, the heap's own state,
// and says "unattributed" for bytes no block covers. A span over two adjacent blocks is cut in
// two.
TEST_F(ReheapSnap, DiffAttributesChangedBytesToBlocks) {
  Heap& heap = make_heap();
  // Class 3 (48 B): 1365 blocks fill a 64 KiB lane, leaving 16 bytes of slack at its end.
  std::vector<unsigned char*> small;
  for (int i = 0; i < 1365; ++i) {
    small.push_back(static_cast<unsigned char*>(heap.allocate(48)));
    ASSERT_NE(small.back(), nullptr);
    fill(small.back(), 48, 20);
  }
  const std::uintptr_t lane = reinterpret_cast<std::uintptr_t>(small[0]) & ~std::uintptr_t{0xFFFF};
  ASSERT_EQ(reinterpret_cast<std::uintptr_t>(small[1]), reinterpret_cast<std::uintptr_t>(small[0]) + 48);
  auto* run = static_cast<unsigned char*>(heap.allocate(64 * 1024));     // a page run
  auto* huge = static_cast<unsigned char*>(heap.allocate(3 << 20));      // a huge block
  ASSERT_TRUE(run != nullptr && huge != nullptr);
  fill(run, 64 * 1024, 21);
  fill(huge, 3 << 20, 22);
  save_untracked("a.snap");

  small[7][20] ^= 0xFF;                            // 1 byte at +20 of a 48-byte block
  small[1][46] ^= 1;                               // the last 2 bytes of block 1 ...
  small[1][47] ^= 1;
  small[2][0] ^= 1;                                // ... and the first of block 2: one span, cut
  run[5000] ^= 0xFF;                               // +5000 in the page run
  for (int i = 0; i < 4; ++i) huge[(1 << 20) + 3 + i] ^= 0xFF;  // 4 bytes at +1 MiB + 3
  auto* slack = reinterpret_cast<unsigned char*>(lane + 65536 - 8);  // lane slack: no block
  *slack = 0x5A;
  heap.set_root(small[9]);                         // the heap's state changes
  save_untracked("b.snap");

  const ToolResult result = run_tool({"diff", "--json", path("a.snap"), path("b.snap")});
  ASSERT_EQ(result.exit_code, 1) << result.out << result.err;
  const Json json = parse_or_fail(result.out);
  EXPECT_TRUE(json["spans"]["complete"].flag);
  const std::vector<Json> spans = diff_spans(json);
  const auto at = [&](const void* p) { return span_at(spans, reinterpret_cast<std::uintptr_t>(p), result.out); };

  const Json one = at(small[7] + 20);
  EXPECT_EQ(one["end"].text, address_hex(reinterpret_cast<std::uintptr_t>(small[7]) + 21));
  EXPECT_EQ(one["bytes"].number, 1u);
  EXPECT_EQ(one["page_offset"].number, (reinterpret_cast<std::uintptr_t>(small[7]) + 20) % kPageSize);
  EXPECT_EQ(one["block"]["kind"].text, "class");
  EXPECT_EQ(one["block"]["address"].text, address_hex(reinterpret_cast<std::uintptr_t>(small[7])));
  EXPECT_EQ(one["block"]["class"].number, 3u);
  EXPECT_EQ(one["block"]["size"].number, 48u);
  EXPECT_EQ(one["block"]["offset"].number, 20u);

  const Json tail = at(small[1] + 46);
  EXPECT_EQ(tail["bytes"].number, 2u);
  EXPECT_EQ(tail["block"]["address"].text, address_hex(reinterpret_cast<std::uintptr_t>(small[1])));
  EXPECT_EQ(tail["block"]["offset"].number, 46u);
  const Json head = at(small[2]);
  EXPECT_EQ(head["bytes"].number, 1u);
  EXPECT_EQ(head["block"]["address"].text, address_hex(reinterpret_cast<std::uintptr_t>(small[2])));
  EXPECT_EQ(head["block"]["offset"].number, 0u);

  const Json in_run = at(run + 5000);
  EXPECT_EQ(in_run["block"]["kind"].text, "page-run");
  EXPECT_EQ(in_run["block"]["address"].text, address_hex(reinterpret_cast<std::uintptr_t>(run)));
  EXPECT_EQ(in_run["block"]["size"].number, 64u * 1024);
  EXPECT_EQ(in_run["block"]["offset"].number, 5000u);
  EXPECT_FALSE(in_run["block"]["free"].flag);

  const Json in_huge = at(huge + (1 << 20) + 3);
  EXPECT_EQ(in_huge["bytes"].number, 4u);
  EXPECT_EQ(in_huge["block"]["kind"].text, "huge");
  EXPECT_EQ(in_huge["block"]["address"].text, address_hex(reinterpret_cast<std::uintptr_t>(huge)));
  EXPECT_EQ(in_huge["block"]["offset"].number, (1u << 20) + 3);
  EXPECT_GE(in_huge["block"]["size"].number, 3u << 20);

  const Json nowhere = at(slack);
  EXPECT_EQ(nowhere["block"]["kind"].text, "unattributed");
  EXPECT_NE(nowhere["block"]["why"].text.find("slack"), std::string::npos);

  bool state_changed = false;
  for (const Json& span : spans) {
    state_changed |= span["block"]["kind"].text == "metadata" && span["block"]["what"].text == "heap state";
  }
  EXPECT_TRUE(state_changed) << result.out;

  // The range of the class page knows its first and last differing byte.
  bool range_found = false;
  for (const Json& range : json["ranges"].items) {
    if (range["first"].text == address_hex(reinterpret_cast<std::uintptr_t>(small[1]) + 46)) {
      range_found = true;
      EXPECT_GE(range["span_count"].number, 2u);
    }
  }
  EXPECT_TRUE(range_found) << result.out;

  // The text report names the same block and offset.
  const ToolResult text = run_tool({"diff", path("a.snap"), path("b.snap")});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("class 3 (48 B) block " +
                          address_hex(reinterpret_cast<std::uintptr_t>(small[7])) + " +20"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("page run " + address_hex(reinterpret_cast<std::uintptr_t>(run)) +
                          " (16 pages, live) +5000"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("unattributed (slack"), std::string::npos) << text.out;
}

TEST_F(ReheapSnap, DiffReportsPagesPresentInOnlyOneState) {
  Heap& heap = make_heap();
  fill(heap.allocate(64 * 1024), 64 * 1024, 7);
  save_untracked("a.snap");
  constexpr std::size_t kHuge = 2 << 20;
  auto* huge = static_cast<unsigned char*>(heap.allocate(kHuge));
  ASSERT_NE(huge, nullptr);
  fill(huge, kHuge, 8);
  save_untracked("b.snap");

  // Every page of the new block is only in B (and, diffed the other way round, only in A).
  const auto covered = [&](const Json& json, const char* kind) {
    const std::string first = address_hex(reinterpret_cast<std::uintptr_t>(huge));
    const std::string last = address_hex(reinterpret_cast<std::uintptr_t>(huge) + kHuge);
    for (const Json& r : json["ranges"].items) {
      // Fixed-width hex strings compare like the addresses.
      if (r["kind"].text == kind && r["begin"].text <= first && last <= r["end"].text) return true;
    }
    return false;
  };
  const ToolResult forward = run_tool({"diff", "--json", path("a.snap"), path("b.snap")});
  ASSERT_EQ(forward.exit_code, 1) << forward.err;
  const Json f = parse_or_fail(forward.out);
  EXPECT_GE(f["pages"]["only_b"].number, kHuge / kPageSize);
  EXPECT_TRUE(covered(f, "only-b")) << forward.out;
  const ToolResult backward = run_tool({"diff", "--json", path("b.snap"), path("a.snap")});
  ASSERT_EQ(backward.exit_code, 1) << backward.err;
  const Json b = parse_or_fail(backward.out);
  EXPECT_EQ(b["pages"]["only_a"].number, f["pages"]["only_b"].number);
  EXPECT_EQ(b["pages"]["changed"].number, f["pages"]["changed"].number);
  EXPECT_TRUE(covered(b, "only-a")) << backward.out;
}

TEST_F(ReheapSnap, CompactOfAChainRestoresTheLatestState) {
  Heap& heap = make_heap();
  constexpr std::size_t kBytes = 256 * 1024;
  auto* block = static_cast<unsigned char*>(heap.allocate(kBytes));
  auto* small = static_cast<unsigned char*>(heap.allocate(48));
  ASSERT_TRUE(block != nullptr && small != nullptr);
  fill(block, kBytes, 9);
  fill(small, 48, 10);
  heap.set_root(small);
  snapshotter_->save(path("gen1.snap"));
  fill(block + 3 * kPageSize, kPageSize, 11);
  snapshotter_->save_increment(path("gen2.snap"));
  fill(block + 40 * kPageSize, 2 * kPageSize, 12);
  fill(small, 48, 13);
  auto* late = static_cast<unsigned char*>(heap.allocate(3000));
  ASSERT_NE(late, nullptr);
  fill(late, 3000, 14);
  const SnapshotInfo latest = snapshotter_->save_increment(path("gen3.snap"));
  const std::vector<unsigned char> expected_block(block, block + kBytes);
  const std::vector<unsigned char> expected_small(small, small + 48);
  const std::vector<unsigned char> expected_late(late, late + 3000);

  const ToolResult info = run_tool({"info", "--json", path("gen3.snap")});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const Json chain = parse_or_fail(info.out)["chain"];
  EXPECT_TRUE(chain["ok"].flag);
  // Without write tracking the increments fall back to full snapshots: a chain of one.
  EXPECT_EQ(chain["files"].items.size(), latest.kind == SnapshotKind::kFull ? 1u : 3u);

  const ToolResult compacted = run_tool({"compact", path("gen3.snap"), path("out.snap")});
  ASSERT_EQ(compacted.exit_code, 0) << compacted.out << compacted.err;
  const ToolResult verified = run_tool({"verify", path("out.snap")});
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
  EXPECT_EQ(read_snapshot_header(path("out.snap")).kind, SnapshotKind::kFull);
  EXPECT_EQ(run_tool({"verify", "--chain", path("gen3.snap")}).exit_code, 0);
  // The compacted file describes the same state as the chain (diff compacts gen3 itself).
  const ToolResult same = run_tool({"diff", path("gen3.snap"), path("out.snap")});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_EQ(run_tool({"diff", path("gen1.snap"), path("out.snap")}).exit_code, 1);

  drop_heap();
  HeapPtr restored = restore(fs::path(path("out.snap")));
  ASSERT_NE(restored, nullptr);
  EXPECT_EQ(restored->root(), small);
  EXPECT_EQ(std::memcmp(block, expected_block.data(), kBytes), 0);
  EXPECT_EQ(std::memcmp(small, expected_small.data(), 48), 0);
  EXPECT_EQ(std::memcmp(late, expected_late.data(), 3000), 0);
  restored.reset();
}

TEST_F(ReheapSnap, InfoAndVerifyExplainABrokenChain) {
  REQUIRE_WRITE_TRACKING();
  Heap& heap = make_heap();
  fill(heap.allocate(8192), 8192, 15);
  snapshotter_->save(path("base.snap"));
  fill(heap.allocate(8192), 8192, 16);
  ASSERT_EQ(snapshotter_->save_increment(path("inc.snap")).kind, SnapshotKind::kIncremental)
      << snapshotter_->tracking();
  fs::remove(path("base.snap"));
  const ToolResult info = run_tool({"info", "--json", path("inc.snap")});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const Json json = parse_or_fail(info.out);
  EXPECT_EQ(json["kind"].text, "incremental");
  EXPECT_EQ(json["parent_file"].text, "base.snap");
  EXPECT_FALSE(json["chain"]["ok"].flag);
  EXPECT_EQ(json["chain"]["error"].text, to_string(SnapshotErrc::kBrokenChain));
  EXPECT_EQ(run_tool({"verify", path("inc.snap")}).exit_code, 0);
  EXPECT_EQ(run_tool({"verify", "--chain", path("inc.snap")}).exit_code, 1);
  EXPECT_EQ(run_tool({"compact", path("inc.snap"), path("out.snap")}).exit_code, 3);
  // diff compacts an increment into $TMPDIR first; a chain that cannot be compacted leaves no
  // temporary file behind.
  const fs::path tmp = path("tmp");
  fs::create_directory(tmp);
  const char* was = std::getenv("TMPDIR");
  const std::string previous = was != nullptr ? was : "";
  ::setenv("TMPDIR", tmp.c_str(), 1);
  const ToolResult diff = run_tool({"diff", path("inc.snap"), path("inc.snap")});
  if (was != nullptr) {
    ::setenv("TMPDIR", previous.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
  EXPECT_EQ(diff.exit_code, 3) << diff.out << diff.err;
  EXPECT_NE(diff.err.find("base.snap"), std::string::npos) << diff.err;
  EXPECT_TRUE(fs::is_empty(tmp)) << "diff left " << fs::directory_iterator(tmp)->path();
}

TEST_F(ReheapSnap, VerifyChainChecksEveryReadableFileUpToABrokenLink) {
  REQUIRE_WRITE_TRACKING();
  Heap& heap = make_heap();
  fill(heap.allocate(8192), 8192, 18);
  snapshotter_->save(path("base.snap"));
  fill(heap.allocate(8192), 8192, 19);
  ASSERT_EQ(snapshotter_->save_increment(path("inc1.snap")).kind, SnapshotKind::kIncremental)
      << snapshotter_->tracking();
  fill(heap.allocate(8192), 8192, 20);
  ASSERT_EQ(snapshotter_->save_increment(path("inc2.snap")).kind, SnapshotKind::kIncremental);
  fs::remove(path("base.snap"));
  const ToolResult result = run_tool({"verify", "--chain", "--json", path("inc2.snap")});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  const Json files = parse_or_fail(result.out)["files"];
  ASSERT_EQ(files.items.size(), 2u) << "inc1, readable, is checked although its own parent is gone:\n"
                                    << result.out;
  // Oldest first, as a chain is listed.
  EXPECT_EQ(files[0]["file"].text, path("inc1.snap"));
  EXPECT_EQ(files[1]["file"].text, path("inc2.snap"));
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_FALSE(files[i]["ok"].flag);
    EXPECT_EQ(files[i]["error"].text, to_string(SnapshotErrc::kBrokenChain));
  }
  EXPECT_NE(files[0]["message"].text.find("base.snap is missing"), std::string::npos) << result.out;
  EXPECT_NE(files[1]["message"].text.find("inc1.snap is bad"), std::string::npos) << result.out;
}

TEST_F(ReheapSnap, VerifyChainCallsAnIncrementBuiltOnADamagedParentBad) {
  REQUIRE_WRITE_TRACKING();
  Heap& heap = make_heap();
  fill(heap.allocate(64 * 1024), 64 * 1024, 21);
  snapshotter_->save(path("base.snap"));
  fill(heap.allocate(8192), 8192, 22);
  ASSERT_EQ(snapshotter_->save_increment(path("inc.snap")).kind, SnapshotKind::kIncremental)
      << snapshotter_->tracking();
  // A damaged page of the parent: its header, and so the link, stay intact.
  copy_with_a_bit_flipped(path("base.snap"), path("flipped.snap"), fs::file_size(path("base.snap")) / 2);
  fs::rename(path("flipped.snap"), path("base.snap"));
  EXPECT_EQ(run_tool({"verify", path("inc.snap")}).exit_code, 0) << "the increment alone is intact";
  const ToolResult result = run_tool({"verify", "--chain", "--json", path("inc.snap")});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  const Json files = parse_or_fail(result.out)["files"];
  ASSERT_EQ(files.items.size(), 2u) << result.out;
  EXPECT_EQ(files[0]["file"].text, path("base.snap"));
  EXPECT_EQ(files[0]["error"].text, to_string(SnapshotErrc::kCorrupt)) << result.out;
  EXPECT_EQ(files[1]["file"].text, path("inc.snap"));
  EXPECT_FALSE(files[1]["ok"].flag) << "an increment restores only through its damaged parent:\n"
                                    << result.out;
  EXPECT_EQ(files[1]["error"].text, to_string(SnapshotErrc::kBrokenChain));
  EXPECT_NE(files[1]["message"].text.find("base.snap is bad (corrupt)"), std::string::npos) << result.out;
  const ToolResult text = run_tool({"verify", "--chain", path("inc.snap")});
  EXPECT_EQ(text.out.find(": ok ("), std::string::npos) << "no file of the chain is listed ok:\n" << text.out;
}

TEST_F(ReheapSnap, JsonEscapesAnyFileName) {
  Heap& heap = make_heap();
  fill(heap.allocate(100), 100, 17);
  const std::string name = path("we\"ird\\ \n\t\x01 \xff\xfe \xc3\xa9.snap");
  snapshotter_->save(name);
  for (const char* command : {"info", "verify"}) {
    const ToolResult result = run_tool({command, "--json", name});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const Json json = parse_or_fail(result.out);
    const Json& file = std::string(command) == "info" ? json["file"] : json["files"][0]["file"];
    // Invalid UTF-8 becomes U+FFFD; valid UTF-8 (é) is kept.
    EXPECT_NE(file.text.find("we\"ird\\ \n\t\x01 \xef\xbf\xbd\xef\xbf\xbd \xc3\xa9.snap"),
              std::string::npos)
        << file.text;
  }
}

}  // namespace
}  // namespace reheap
