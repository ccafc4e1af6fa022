// Forged files in restores that convert between build flavours (heap/src/snapshot/
// checked_conversion.h). A checked build restoring a release snapshot rebuilds the free-block
// shadow from the file's free lists: a forged free list must still be refused (kCorrupt) by the
// state check, which runs in full before the conversion trusts anything; and a chain whose files
// come from both flavours is refused as a broken chain. The other build's snapshot is the
// committed fixture of the snapshot suite (tests/snapshot/fixtures/README.md).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "forger.h"
#include "heap_state.h"
#include "reheap/heap.h"
#include "misuse_support.h"
#include "reheap/size_class.h"
#include "reheap/snapshot.h"
#include "reheap/snapshot_file.h"
#include "write_tracking_support.h"
#include "write_tracking_support.h"

namespace reheap::adversarial {
namespace {

using testsupport::kChecked;

std::filesystem::path other_build_fixture() {
  return std::filesystem::path(REHEAP_FIXTURE_DIR) / (kChecked ? "release.snap" : "checked.snap");
}

Bytes read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const std::filesystem::path& file, const Bytes& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

class Scratch {
 public:
  Scratch()
      : dir_(std::filesystem::temp_directory_path() /
             ("reheap-conversion-forgery-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  std::filesystem::path operator/(const std::string& name) const { return dir_ / name; }

 private:
  std::filesystem::path dir_;
};

struct Refusal {
  bool refused = false;
  SnapshotErrc code = SnapshotErrc::kIo;
  std::string what;
};

Refusal try_restore(const std::filesystem::path& file) {
  try {
    HeapPtr heap = restore(file, RestoreOptions{.layout = LayoutCheck::kNone});
  } catch (const SnapshotError& e) {
    return {true, e.code(), e.what()};
  }
  return {};
}

class CheckedConversionForgery : public testing::Test {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "ThreadSanitizer builds place the zone elsewhere than the fixtures";
#endif
  }
};

TEST_F(CheckedConversionForgery, AForgedFreeListInTheOtherBuildsSnapshotIsRefused) {
  const Bytes original = read_file(other_build_fixture());
  ASSERT_FALSE(original.empty()) << other_build_fixture();
  const SnapshotHeader header = read_snapshot_header(other_build_fixture());
  ASSERT_NE(header.checked_build, kChecked);
  // Where the file's heap state lies: an address only, read through the file with peek.
  const auto* st = detail::heap_at(header.zone_base +
                                   (std::uintptr_t{detail::first_chunk_of(header.heap_id)} << detail::kChunkShift));
  const unsigned cls = size_class(8);  // three free blocks in the fixture
  struct Case {
    const char* name;
    void (*forge)(Forger&, const detail::HeapState*, unsigned);
    const char* says;
  };
  const Case cases[] = {
      {"a cycle", [](Forger& g, const detail::HeapState* s, unsigned c) {
         const std::uint64_t head = g.peek(&s->free[c]);
         g.poke(g.peek(head), head);  // the second block links back to the head
       }, "cycle"},
      {"a block beyond the cursor", [](Forger& g, const detail::HeapState* s, unsigned c) {
         g.poke(&s->free[c], g.peek(&s->cursor[c].cur));
       }, "carved"},
      {"a block of another class's lane", [](Forger& g, const detail::HeapState* s, unsigned c) {
         g.poke(&s->free[c], g.peek(&s->free[c]) + detail::kLaneSize);
       }, "free block"},
  };
  Scratch dir;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Forger forger(original);
    c.forge(forger, st, cls);
    write_file(dir / "forged.snap", forger.bytes());
    const Refusal r = try_restore(dir / "forged.snap");
    ASSERT_TRUE(r.refused);
    EXPECT_EQ(r.code, SnapshotErrc::kCorrupt) << r.what;
    EXPECT_NE(r.what.find(c.says), std::string::npos) << r.what;
  }
  // Nothing was left taken: the real file restores.
  EXPECT_FALSE(try_restore(other_build_fixture()).refused);
}

TEST_F(CheckedConversionForgery, AChainOfBothBuildsIsRefused) {
  REQUIRE_WRITE_TRACKING();
  Scratch dir;
  {
    HeapPtr heap = Heap::create();
    void* block = heap->allocate(64);
    heap->set_root(block);
    Snapshotter snapshotter(*heap);
    snapshotter.save(dir / "full.snap");
    heap->deallocate(heap->allocate(64));
    const SnapshotInfo info = snapshotter.save_increment(dir / "increment.snap");
    ASSERT_EQ(info.kind, SnapshotKind::kIncremental) << info.fallback_reason;
  }
  // The parent now claims the other build.
  Forger forger(read_file(dir / "full.snap"));
  forger.edit_header("checked_build", [](msgpack::object& v, msgpack::zone&) { v = msgpack::object(!kChecked); });
  write_file(dir / "full.snap", forger.bytes());
  const Refusal r = try_restore(dir / "increment.snap");
  ASSERT_TRUE(r.refused);
  EXPECT_EQ(r.code, SnapshotErrc::kBrokenChain) << r.what;
  EXPECT_NE(r.what.find("REHEAP_CHECKS"), std::string::npos) << r.what;
}

}  // namespace
}  // namespace reheap::adversarial
