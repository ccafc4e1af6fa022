// Bad input: a file that is cut short, has a bit flipped anywhere, is not a snapshot, has an
// unknown version, or is structurally wrong behind valid checksums is refused with the code that
// says why and a message naming the file - never a crash, never a heap with wrong contents - and
// the refused restore leaves nothing behind in the zone: the good file restores afterwards.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string>

#include "cases.h"
#include "file_format.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"
#include "support.h"

namespace reheap::snaptest {
namespace {

const std::size_t kPage = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

class SnapshotBadInput : public testing::Test {
 protected:
  void SetUp() override {
    {
      HeapPtr heap = Heap::create();
      build_in(*heap, find_case("map"), 31);
      digest_ = digest_of(*heap, find_case("map"));
      Snapshotter(*heap).save(good_);
    }
    good_bytes_ = read_bytes(good_);
    file_ = decode(good_bytes_, kPage);
    ASSERT_EQ(file_.error, "") << "the saved file cannot be read as SNAPSHOT_FORMAT.md says";
    ASSERT_TRUE(encode(file_) == good_bytes_) << "the test's own encoder disagrees with the writer";
    ASSERT_GE(file_.runs.size(), 3u);
    before_ = zone_use();
  }

  void TearDown() override {
    EXPECT_EQ(zone_use(), before_) << to_string(zone_use()) << " vs " << to_string(before_);
    HeapPtr heap = restore(good_);  // a refused file never spoils the next restore
    EXPECT_EQ(digest_of(*heap, find_case("map")), digest_);
  }

  // Writes `bytes` as bad.snap and expects restore() and verify_snapshot() to refuse it with one
  // of `allowed`, naming the file, leaving the zone as it was. Returns restore's outcome.
  Outcome expect_refused(const Bytes& bytes, std::initializer_list<SnapshotErrc> allowed,
                         const std::string& what) {
    write_bytes(bad_, bytes);
    const Outcome restored = attempt([&] { HeapPtr heap = restore(bad_); });
    const Outcome verified = attempt([&] { verify_snapshot(bad_); });
    for (const Outcome* o : {&restored, &verified}) {
      const char* who = o == &restored ? "restore" : "verify_snapshot";
      const bool ok = o->kind == Outcome::Kind::kSnapshotError &&
                      std::find(allowed.begin(), allowed.end(), o->code) != allowed.end();
      EXPECT_TRUE(ok) << what << ": " << who << " " << o->describe();
      if (o->kind == Outcome::Kind::kSnapshotError) {
        EXPECT_NE(o->what.find("bad.snap"), std::string::npos)
            << what << ": " << who << "'s message does not name the file: " << o->what;
      }
    }
    EXPECT_EQ(zone_use(), before_) << what << ": the refused restore left "
                                   << to_string(zone_use());
    return restored;
  }

  TempDir dir_;
  std::filesystem::path good_ = dir_ / "good.snap";
  std::filesystem::path bad_ = dir_ / "bad.snap";
  Bytes good_bytes_;
  SnapshotFile file_;
  std::uint64_t digest_ = 0;
  ZoneUse before_;
};

TEST_F(SnapshotBadInput, TruncatedAtAnyPointIsRefused) {
  const std::size_t header_end = kPreambleBytes + file_.header_length;
  std::vector<std::size_t> cuts = {1, 7, 8, 11, 12, 15, 16, 17, kPreambleBytes + file_.header_length / 2,
                                   header_end - 1, header_end, header_end + 4};
  for (const FileRun* r : {&file_.runs.front(), &file_.runs[file_.runs.size() / 2], &file_.runs.back()}) {
    const std::size_t n = r->data.size();
    for (std::size_t c : {r->at, r->at + 1, r->at + 8, r->at + 15, r->checksum_at,
                          r->checksum_at + 7, r->data_at, r->data_at + 1, r->data_at + n / 2,
                          r->data_at + n - 1}) {
      cuts.push_back(c);
    }
  }
  for (std::size_t c : {file_.end_record_at, file_.end_record_at + 12, file_.end_record_at + 23,
                        file_.trailer_at, file_.trailer_at + 8, file_.trailer_at + 24,
                        file_.trailer_at + 31}) {
    cuts.push_back(c);
  }
  std::map<std::string, std::vector<std::size_t>> by_code;
  for (std::size_t cut : cuts) {
    ASSERT_LT(cut, good_bytes_.size());
    const Bytes cut_bytes(good_bytes_.begin(), good_bytes_.begin() + static_cast<std::ptrdiff_t>(cut));
    const Outcome o = expect_refused(cut_bytes, {SnapshotErrc::kTruncated, SnapshotErrc::kCorrupt},
                                     "cut at " + std::to_string(cut));
    by_code[o.kind == Outcome::Kind::kSnapshotError ? to_string(o.code) : "no error"].push_back(cut);
  }
  std::ostringstream summary;
  for (const auto& [code, offsets] : by_code) {
    summary << code << ":";
    for (std::size_t o : offsets) summary << ' ' << o;
    summary << "; ";
  }
  RecordProperty("codes_by_cut", summary.str());
  std::printf("cuts of a %zu-byte file by code: %s\n", good_bytes_.size(), summary.str().c_str());
}

TEST_F(SnapshotBadInput, AnyFlippedBitIsDetected) {
  std::vector<std::size_t> positions;
  for (std::size_t i = 0; i < kPreambleBytes; ++i) positions.push_back(i);
  const std::size_t header_step = std::max<std::size_t>(1, file_.header_length / 120);
  for (std::size_t i = kPreambleBytes; i < file_.head.size(); i += header_step) positions.push_back(i);
  for (std::size_t i = file_.head.size() - 8; i < file_.head.size(); ++i) positions.push_back(i);
  const std::size_t run_step = std::max<std::size_t>(1, file_.runs.size() / 6);
  for (std::size_t k = 0; k < file_.runs.size(); k += run_step) {
    const FileRun& r = file_.runs[k];
    for (std::size_t i = 0; i < 16; ++i) positions.push_back(r.at + i);
    for (std::size_t i = 0; i < 8; ++i) positions.push_back(r.checksum_at + i);
    positions.push_back(r.data_at);
    positions.push_back(r.data_at + r.data.size() / 2 + 3);
    positions.push_back(r.data_at + r.data.size() - 1);
  }
  for (std::size_t i = file_.end_record_at; i < good_bytes_.size(); ++i) positions.push_back(i);
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());

  for (std::size_t n = 0; n < positions.size(); ++n) {
    Bytes bytes = good_bytes_;
    const std::size_t at = positions[n];
    bytes[at] ^= static_cast<unsigned char>(1u << (n % 8));
    expect_refused(bytes,
                   {SnapshotErrc::kCorrupt, SnapshotErrc::kNotASnapshot,
                    SnapshotErrc::kUnsupportedVersion, SnapshotErrc::kTruncated},
                   "bit " + std::to_string(n % 8) + " of byte " + std::to_string(at));
    if (HasFailure()) break;  // one precise report beats hundreds
  }
}

TEST_F(SnapshotBadInput, WrongMagicIsNotASnapshot) {
  Bytes bytes = good_bytes_;
  std::memcpy(bytes.data(), "NOTASNAP", 8);
  expect_refused(bytes, {SnapshotErrc::kNotASnapshot}, "wrong magic");
  const std::string text = "this is a text file, long enough to hold a preamble and a header\n";
  expect_refused(Bytes(text.begin(), text.end()), {SnapshotErrc::kNotASnapshot}, "a text file");
  expect_refused(Bytes(), {SnapshotErrc::kTruncated, SnapshotErrc::kNotASnapshot}, "empty file");
}

TEST_F(SnapshotBadInput, UnknownVersionIsUnsupported) {
  for (std::uint64_t version : {0ull, 1ull, 3ull, 0xFFFFFFFFull}) {
    Bytes bytes = good_bytes_;
    store_le(bytes, 8, 4, version);
    const Outcome o = expect_refused(bytes, {SnapshotErrc::kUnsupportedVersion},
                                     "version " + std::to_string(version));
    EXPECT_NE(o.what.find(std::to_string(version)), std::string::npos)
        << "the message should say which version: " << o.what;
  }
}

TEST_F(SnapshotBadInput, AVersionOneFileSaysWhyThisBuildCannotRestoreIt) {
  Bytes bytes = good_bytes_;
  store_le(bytes, 8, 4, 1);
  const Outcome o = expect_refused(bytes, {SnapshotErrc::kUnsupportedVersion}, "version 1");
  // It names the file's version, the version this build reads, and what a user can do.
  EXPECT_NE(o.what.find("snapshot format version 1 is not supported: this build reads snapshot format version 2 only"),
            std::string::npos)
      << o.what;
  EXPECT_NE(o.what.find("restore the file with a build of reheap that reads format version 1"), std::string::npos)
      << o.what;
  EXPECT_EQ(o.what.find("stop "), std::string::npos) << o.what;
}

TEST_F(SnapshotBadInput, OversizedHeaderLengthIsCorrupt) {
  Bytes bytes = good_bytes_;
  store_le(bytes, 12, 4, (16u << 20) + 1);
  expect_refused(bytes, {SnapshotErrc::kCorrupt}, "header length 16 MiB + 1");
}

TEST_F(SnapshotBadInput, BytesAfterTheTrailerAreCorrupt) {
  Bytes bytes = good_bytes_;
  bytes.push_back(0);
  expect_refused(bytes, {SnapshotErrc::kCorrupt}, "one byte after the trailer");
}

TEST_F(SnapshotBadInput, MissingFileIsAnIoError) {
  const Outcome o = attempt([&] { HeapPtr heap = restore(dir_ / "missing.snap"); });
  EXPECT_TRUE(o.failed_with(SnapshotErrc::kIo)) << o.describe();
  EXPECT_NE(o.what.find("missing.snap"), std::string::npos) << o.what;
}

// Structural rules checked behind valid checksums: the edited files are encoded again with every
// checksum and the trailer recomputed, so only the rule itself can catch them.
TEST_F(SnapshotBadInput, RunOutsideTheHeapsChunksIsRefusedBeforeWriting) {
  // Another live heap, whose page the edited run points at. It must not take the saved heap's
  // chunk, or the restore would stop at "range in use" before reading any run.
  const SnapshotHeader header = read_snapshot_header(good_);
  std::vector<HeapPtr> heaps;
  unsigned char* victim = nullptr;
  while (victim == nullptr && heaps.size() < 4) {
    heaps.push_back(Heap::create());
    auto* p = static_cast<unsigned char*>(heaps.back()->allocate(kPage, kPage));
    const std::size_t index = (reinterpret_cast<std::uintptr_t>(p) - header.zone_base) / header.chunk_size;
    const bool taken = std::any_of(header.chunks.begin(), header.chunks.end(),
                                   [&](const SnapshotChunk& c) { return c.index == index; });
    if (!taken) victim = p;
  }
  ASSERT_NE(victim, nullptr);
  heaps.erase(heaps.begin(), heaps.end() - 1);  // only the victim's heap stays
  fill_words(victim, kPage, 77);
  before_ = zone_use();

  SnapshotFile f = file_;
  f.runs[1].address = reinterpret_cast<std::uintptr_t>(victim);
  f.runs[1].pages = 1;
  f.runs[1].data.resize(kPage);
  std::sort(f.runs.begin(), f.runs.end(), [](const FileRun& a, const FileRun& b) { return a.address < b.address; });
  expect_refused(encode(f), {SnapshotErrc::kCorrupt}, "a run in another heap's chunk");
  EXPECT_TRUE(words_intact(victim, kPage, 77)) << "the refused restore wrote into another heap";

  f = file_;
  f.runs[0].address = 0x10000;  // outside the zone altogether
  expect_refused(encode(f), {SnapshotErrc::kCorrupt}, "a run outside the zone");
  heaps.clear();
  before_ = zone_use();
}

TEST_F(SnapshotBadInput, MalformedRunsAreCorrupt) {
  auto edited = [&](auto&& edit) {
    SnapshotFile f = file_;
    edit(f);
    return encode(f);
  };
  expect_refused(edited([](SnapshotFile& f) { f.runs[1].address += 8; }), {SnapshotErrc::kCorrupt},
                 "an unaligned run address");
  expect_refused(edited([](SnapshotFile& f) { f.runs[1].address = f.runs[0].address; }),
                 {SnapshotErrc::kCorrupt}, "two runs at the same address");
  expect_refused(edited([](SnapshotFile& f) { std::swap(f.runs[1], f.runs[2]); }),
                 {SnapshotErrc::kCorrupt}, "runs out of order");
  expect_refused(edited([](SnapshotFile& f) { f.runs[1].flags |= 2; }), {SnapshotErrc::kCorrupt},
                 "an unknown run flag");
  expect_refused(edited([](SnapshotFile& f) { f.runs[1].flags |= 1; f.runs[1].data.clear(); }),
                 {SnapshotErrc::kCorrupt}, "a zero run in a full snapshot");
  {
    SnapshotFile f = file_;
    f.runs[2].checksum ^= 1;
    expect_refused(encode(f, /*keep_checksums=*/true), {SnapshotErrc::kCorrupt},
                   "a wrong data checksum under a right digest");
  }
  Bytes bytes = good_bytes_;
  store_le(bytes, file_.trailer_at, 8, file_.trailer_runs + 1);
  expect_refused(bytes, {SnapshotErrc::kCorrupt}, "a wrong run count in the trailer");
  bytes = good_bytes_;
  store_le(bytes, file_.trailer_at + 8, 8, file_.trailer_pages - 1);
  expect_refused(bytes, {SnapshotErrc::kCorrupt}, "a wrong page count in the trailer");
}

}  // namespace
}  // namespace reheap::snaptest
