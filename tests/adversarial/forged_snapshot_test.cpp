// Forged snapshots: files whose checksums are all valid (verify_snapshot accepts them) but whose
// allocator state lies. Restore must refuse every one by name before handing the heap out, and
// nothing it does may touch another heap: two bystander heaps are checked byte for byte after
// every attempt. One case per field class: the header, the heap state, class cursors and free
// lists, chunk headers of every kind, page tables, free-run bins.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "forger.h"
#include "heap_state.h"
#include "reheap/byte_stream.h"
#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "reheap/snapshot_file.h"
#include "reheap/zone.h"

namespace reheap::adversarial {
namespace {

using detail::ChunkHeader;
using detail::FreeRun;
using detail::HeapState;
using detail::kFirstRunPage;
using reheap::kPageSize;

constexpr std::size_t kLargeBlock = 1 << 20;  // 256 pages: 63 fill a large chunk

// A heap with something in every part of the allocator state, saved; the addresses of the fields
// the forgeries aim at; and the heap destroyed, so that its file can be restored.
struct Subject {
  Bytes file;
  // Addresses only once the heap is gone (its chunks are in quarantine, inaccessible in checked
  // builds): the forgeries read what the file holds there with Forger::peek.
  HeapState* st = nullptr;
  std::uint64_t id = 0;
  void* root = nullptr;
  void* free_small = nullptr;  // the head of the 64-byte class's free list
  void* free_small_next = nullptr;
  unsigned small_class = 0;
  ChunkHeader* carve = nullptr;  // the large chunk runs are carved from
  ChunkHeader* older = nullptr;  // a full large chunk (not the carve chunk)
  ChunkHeader* huge = nullptr;
  std::uintptr_t live_run = 0;   // a live large run in `carve`
  std::uintptr_t free_run = 0;   // a free large run in `carve` (in a bin)
  ChunkHeader* first_class = nullptr;
  ChunkHeader* second_class = nullptr;  // the heap's second class chunk
  unsigned page_class = 0;                // the 4 KiB class, two of whose lanes are purged
  void* purged_block = nullptr;           // a block in the first of them
  detail::LanePurgeMap* purge_map = nullptr;
};

Subject make_subject() {
  Subject s;
  HeapPtr heap = Heap::create();
  s.st = detail::state(heap.get());
  s.id = heap->id();
  std::vector<void*> small;
  for (int i = 0; i < 100; ++i) small.push_back(heap->allocate(64));
  for (int i = 0; i < 100; i += 2) heap->deallocate(small[static_cast<std::size_t>(i)]);
  std::memset(small[1], 0x5a, 64);
  s.small_class = size_class(64);
  // Enough 16 KiB blocks to need a second class chunk (2 MiB of lanes per chunk and class).
  for (int i = 0; i < 140; ++i) std::memset(heap->allocate(16384), 1, 16);
  // A short run freed: held for the next request of its length (page_runs.cpp), at the start of
  // the first large chunk, away from the runs the page-table forgeries aim at.
  heap->deallocate(heap->allocate(32 * 1024));
  std::vector<void*> runs;
  for (int i = 0; i < 66; ++i) runs.push_back(heap->allocate(kLargeBlock));
  for (void* r : runs) std::memset(r, 7, 64);
  heap->deallocate(runs[64]);  // a free run in the second large chunk, between two live ones
  // Three lanes of 4 KiB blocks, the first two freed and purged (lane_purge.cpp), the third, where
  // the cursor is, live.
  s.page_class = size_class(4096);
  std::vector<void*> pages;
  for (int i = 0; i < 48; ++i) pages.push_back(heap->allocate(4096));
  for (int i = 0; i < 32; ++i) heap->deallocate(pages[static_cast<std::size_t>(i)]);
  s.purged_block = pages[3];
  heap->purge_free_lanes();
  s.purge_map = detail::purge_map(s.st);
  s.root = heap->allocate(200);
  heap->set_root(s.root);
  auto* huge = static_cast<unsigned char*>(heap->allocate(3 << 20));
  huge[12345] = 9;
  s.free_small = s.st->free[s.small_class];
  s.free_small_next = *static_cast<void**>(s.free_small);
  s.carve = s.st->large_carve;
  s.huge = s.st->large_head;  // the newest large-list entry
  for (ChunkHeader* c = s.st->large_head; c != nullptr; c = c->next) {
    if (c->kind == detail::ChunkKind::kLarge && c != s.carve) s.older = c;
  }
  s.live_run = reinterpret_cast<std::uintptr_t>(runs[65]);
  s.free_run = reinterpret_cast<std::uintptr_t>(runs[64]);
  s.first_class = s.st->class_head;
  s.second_class = s.st->class_head->next;
  {
    VectorSink sink(s.file);
    Snapshotter(*heap).write(sink);
  }
  return s;
}

const Subject& subject() {
  static const Subject s = [] {
    HeapScope system(nullptr);
    return make_subject();
  }();
  return s;
}

// Two heaps that have nothing to do with the forged file, their bytes known.
struct Bystanders {
  HeapPtr a = Heap::create();
  HeapPtr b = Heap::create();
  std::vector<unsigned char*> blocks;
  Bystanders() {
    for (Heap* h : {a.get(), b.get()}) {
      for (std::size_t size : {std::size_t{64}, std::size_t{5000}, std::size_t{200000}, std::size_t{2} << 20}) {
        auto* p = static_cast<unsigned char*>(h->allocate(size));
        std::memset(p, 0xb7, size);
        blocks.push_back(p);
      }
    }
  }
  void expect_intact(const std::string& when) const {
    std::size_t i = 0;
    for (Heap* h : {a.get(), b.get()}) {
      for (std::size_t size : {std::size_t{64}, std::size_t{5000}, std::size_t{200000}, std::size_t{2} << 20}) {
        const unsigned char* p = blocks[i++];
        std::size_t changed = 0;
        for (std::size_t k = 0; k < size; ++k) changed += p[k] != 0xb7;
        EXPECT_EQ(changed, 0u) << when << ": a bystander heap's " << size << "-byte block changed";
        EXPECT_EQ(Heap::owner_of(p), h);
      }
    }
  }
};

struct Forgery {
  std::string name;
  std::function<void(Forger&, const Subject&)> forge;
  SnapshotErrc expected = SnapshotErrc::kCorrupt;
  std::string says;  // a phrase the message must hold
};

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// An address in a chunk of the zone that the subject does not own: far in the class half.
std::uintptr_t unlisted_chunk() {
  return Zone::stats().base + (std::uintptr_t{40000} << detail::kChunkShift) + 4096;
}

std::vector<Forgery> forgeries() {
  using S = const Subject&;
  std::vector<Forgery> f;
  // The header.
  f.push_back({"header committed below the state's", [](Forger& g, S) { g.set_header("committed", 4096); }, SnapshotErrc::kCorrupt, "committed"});
  f.push_back({"header root", [](Forger& g, S s) { g.set_header("root", address(s.root) + 16); }, SnapshotErrc::kCorrupt, "root"});
  f.push_back({"header limit", [](Forger& g, S) { g.set_header("limit", 12345); }, SnapshotErrc::kCorrupt, "limit"});
  f.push_back({"header heap id of another generation", [](Forger& g, S s) { g.set_header("heap_id", s.id + (std::uint64_t{1} << 32)); }, SnapshotErrc::kCorrupt, "heap id"});
  f.push_back({"header zone elsewhere", [](Forger& g, S) { g.set_header("zone_base", Zone::stats().base + (std::uint64_t{1} << 40)); }, SnapshotErrc::kZoneMismatch, ""});
  // The heap state.
  f.push_back({"state committed forged under a limit", [](Forger& g, S s) { g.poke(&s.st->committed, 4096); }, SnapshotErrc::kCorrupt, "committed"});
  f.push_back({"state id", [](Forger& g, S s) { g.poke(&s.st->id, s.id + 1); }, SnapshotErrc::kCorrupt, "heap id"});
  f.push_back({"state class list head", [](Forger& g, S s) { g.poke(&s.st->class_head, unlisted_chunk()); }, SnapshotErrc::kCorrupt, "class chunk list"});
  f.push_back({"state class tail", [](Forger& g, S s) { g.poke(&s.st->class_tail, address(s.first_class)); }, SnapshotErrc::kCorrupt, "tail"});
  f.push_back({"state class count", [](Forger& g, S s) { g.poke(&s.st->class_chunks, 1); }, SnapshotErrc::kCorrupt, "count"});
  f.push_back({"state large list into an unlisted chunk (fuzz regression)", [](Forger& g, S s) { g.poke(&s.st->large_head, unlisted_chunk() - 4096); }, SnapshotErrc::kCorrupt, "large chunk list"});
  f.push_back({"state large list into a class chunk", [](Forger& g, S s) { g.poke(&s.st->large_head, address(s.first_class)); }, SnapshotErrc::kCorrupt, "large"});
  f.push_back({"state carve chunk", [](Forger& g, S s) { g.poke(&s.st->large_carve, address(s.huge)); }, SnapshotErrc::kCorrupt, "carved"});
  f.push_back({"state large chunk count", [](Forger& g, S s) { g.poke(&s.st->large_chunks, 2); }, SnapshotErrc::kCorrupt, "large chunk count"});
  f.push_back({"state large live pages", [](Forger& g, S s) { g.poke(&s.st->large_live_pages, 3); }, SnapshotErrc::kCorrupt, "accounting"});
  f.push_back({"state huge live bytes", [](Forger& g, S s) { g.poke(&s.st->huge_live_bytes, 1 << 30); }, SnapshotErrc::kCorrupt, "accounting"});
  f.push_back({"state bin mask", [](Forger& g, S s) { g.poke(&s.st->bin_mask[0], ~std::uint64_t{0}); }, SnapshotErrc::kCorrupt, "bin mask"});
  f.push_back({"state retained huge run count", [](Forger& g, S s) { g.poke(&s.st->retained_huge_runs, 3); }, SnapshotErrc::kCorrupt, "retained"});
  f.push_back({"a byte past the state in its page (a later recycled heap would show it)", [](Forger& g, S s) {
    g.poke(address(s.st) + sizeof(detail::HeapState) + 8, 0x41, 1);
  }, SnapshotErrc::kCorrupt, "header page"});
  f.push_back({"state bin into the heap state", [](Forger& g, S s) { g.poke(&s.st->bins[256], address(s.st)); }, SnapshotErrc::kCorrupt, "bin"});
  // Class cursors and free lists.
  f.push_back({"free list into another chunk's header", [](Forger& g, S s) { g.poke(&s.st->free[s.small_class], address(s.second_class)); }, SnapshotErrc::kCorrupt, "free block"});
  f.push_back({"free list into another class's lane", [](Forger& g, S s) { g.poke(&s.st->free[s.small_class], g.peek(&s.st->free[s.small_class]) + detail::kLaneSize); }, SnapshotErrc::kCorrupt, "free block"});
  // The 16 KiB class carves in the second chunk, so the whole first chunk is behind its cursor:
  // only the lane count tells the slot after its 31st lane (in its own group) from a lane.
  f.push_back({"free list into the slot past a class's last lane of a chunk", [](Forger& g, S s) {
    const unsigned c = size_class(16384);
    g.poke(&s.st->free[c], detail::chunk_of(s.first_class, true) +
                               detail::lane_offset(c, detail::kLanesPerClassChunk - 1) + detail::kLaneSize);
  }, SnapshotErrc::kCorrupt, "not a carved block"});
  f.push_back({"free list misaligned", [](Forger& g, S s) { g.poke(&s.st->free[s.small_class], address(s.free_small) + 8); }, SnapshotErrc::kCorrupt, "free block"});
  f.push_back({"free list beyond the cursor", [](Forger& g, S s) { g.poke(&s.st->free[s.small_class], g.peek(&s.st->cursor[s.small_class].cur)); }, SnapshotErrc::kCorrupt, "carved"});
  f.push_back({"free list cycle", [](Forger& g, S s) { g.poke(address(s.free_small_next), address(s.free_small)); }, SnapshotErrc::kCorrupt, "cycle"});
  f.push_back({"free list head a small integer (fuzz regression)", [](Forger& g, S s) { g.poke(&s.st->free[s.small_class], 2); }, SnapshotErrc::kCorrupt, "outside the zone"});
  f.push_back({"free list into an unlisted chunk", [](Forger& g, S s) { g.poke(address(s.free_small), unlisted_chunk()); }, SnapshotErrc::kCorrupt, "free block"});
  f.push_back({"held run into a free run", [](Forger& g, S s) { g.poke(&s.st->held_run, s.free_run); }, SnapshotErrc::kCorrupt, "held page run"});
  f.push_back({"held run into a huge chunk", [](Forger& g, S s) { g.poke(&s.st->held_run, address(s.huge) + 4096); }, SnapshotErrc::kCorrupt, "held page run"});
  f.push_back({"held run length", [](Forger& g, S s) { g.poke(&s.st->held_run_pages, 9); }, SnapshotErrc::kCorrupt, "held page run's length"});
  f.push_back({"held run a live run of 256 pages", [](Forger& g, S s) { g.poke(&s.st->held_run, s.live_run); }, SnapshotErrc::kCorrupt, "held page run"});
  f.push_back({"purge map marks the cursor's lane", [](Forger& g, S s) {
    g.poke(&s.purge_map[0].lanes[s.page_class], g.peek(&s.purge_map[0].lanes[s.page_class]) | 4u);
  }, SnapshotErrc::kCorrupt, "not behind its cursor"});
  f.push_back({"purged lane count", [](Forger& g, S s) { g.poke(&s.st->purged_lanes[s.page_class], 3); }, SnapshotErrc::kCorrupt, "purged lanes differ"});
  f.push_back({"purge map pages", [](Forger& g, S s) { g.poke(&s.st->purge_map_pages, 16); }, SnapshotErrc::kCorrupt, "purge map"});
  f.push_back({"free list into a purged lane", [](Forger& g, S s) { g.poke(&s.st->free[s.page_class], address(s.purged_block)); }, SnapshotErrc::kCorrupt, "purged lane"});
  f.push_back({"cursor past its lane", [](Forger& g, S s) { g.poke(&s.st->cursor[s.small_class].cur, g.peek(&s.st->cursor[s.small_class].cur) + (1 << 20)); }, SnapshotErrc::kCorrupt, "cursor"});
  f.push_back({"cursor limit past its lane", [](Forger& g, S s) { g.poke(&s.st->cursor[s.small_class].limit, g.peek(&s.st->cursor[s.small_class].limit) + (1 << 16)); }, SnapshotErrc::kCorrupt, "cursor"});
  f.push_back({"cursor in an unlisted chunk", [](Forger& g, S s) { g.poke(&s.st->cursor[s.small_class].chunk, unlisted_chunk()); }, SnapshotErrc::kCorrupt, "cursor"});
  f.push_back({"cursor lane", [](Forger& g, S s) { g.poke(&s.st->cursor[s.small_class].lane, 40); }, SnapshotErrc::kCorrupt, "lane number"});
  f.push_back({"carved count", [](Forger& g, S s) { g.poke(&s.st->cursor[s.small_class].carved, 1u << 30); }, SnapshotErrc::kCorrupt, "carved"});
  f.push_back({"blocks of a class without a cursor", [](Forger& g, S s) { g.poke(&s.st->free[0], address(s.free_small)); }, SnapshotErrc::kCorrupt, "without a cursor"});
  // Chunk headers.
  f.push_back({"large chunk frontier beyond its chunk (wiped another heap)", [](Forger& g, S s) { g.poke(&s.carve->frontier, 0x7fffffff); }, SnapshotErrc::kCorrupt, "frontier"});
  f.push_back({"large chunk frontier short of its runs", [](Forger& g, S s) { g.poke(&s.older->frontier, kFirstRunPage + 3); }, SnapshotErrc::kCorrupt, "page table"});
  f.push_back({"large chunk next into an unlisted chunk", [](Forger& g, S s) { g.poke(&s.carve->next, unlisted_chunk() - 4096); }, SnapshotErrc::kCorrupt, "large chunk list"});
  f.push_back({"large chunk prev", [](Forger& g, S s) { g.poke(&s.older->prev, 0); }, SnapshotErrc::kCorrupt, "link"});
  f.push_back({"large chunk kind", [](Forger& g, S s) { g.poke(&s.carve->kind, static_cast<std::uint32_t>(detail::ChunkKind::kHuge)); }, SnapshotErrc::kCorrupt, "kind"});
  f.push_back({"large chunk owner", [](Forger& g, S s) { g.poke(&s.carve->owner, s.id + 1); }, SnapshotErrc::kCorrupt, "owner"});
  f.push_back({"large chunk run length", [](Forger& g, S s) { g.poke(&s.carve->run_chunks, 4); }, SnapshotErrc::kCorrupt, "run length"});
  f.push_back({"huge run longer than listed", [](Forger& g, S s) { g.poke(&s.huge->run_chunks, 900); }, SnapshotErrc::kCorrupt, "run length"});
  f.push_back({"huge block size beyond its run", [](Forger& g, S s) { g.poke(&s.huge->huge_size, std::uint64_t{1} << 40); }, SnapshotErrc::kCorrupt, "outside its run"});
  f.push_back({"a live huge run marked kept, past the heap's last keeping", [](Forger& g, S s) { g.poke(&s.huge->retained_seq, 5); }, SnapshotErrc::kCorrupt, "kept"});
  f.push_back({"huge block pointer elsewhere", [](Forger& g, S s) { g.poke(&s.huge->huge_block, address(s.carve) + 4096); }, SnapshotErrc::kCorrupt, "outside its run"});
  f.push_back({"class chunk ordinal", [](Forger& g, S s) { g.poke(&s.second_class->ordinal, 7); }, SnapshotErrc::kCorrupt, "ordinal"});
  f.push_back({"class chunk next cycle", [](Forger& g, S s) { g.poke(&s.second_class->next, address(s.first_class)); }, SnapshotErrc::kCorrupt, "cycle"});
  // Page tables and bins.
  f.push_back({"page table: a live run made longer", [](Forger& g, S s) {
    const std::size_t page = (s.live_run - address(s.carve)) / kPageSize;
    g.poke(detail::page_table(s.carve) + page, detail::kRunHead | 0x3000);
  }, SnapshotErrc::kCorrupt, "page table"});
  f.push_back({"page table: a free run marked live", [](Forger& g, S s) {
    const std::size_t page = (s.free_run - address(s.carve)) / kPageSize;
    const std::uint16_t* pt = detail::page_table(s.carve);
    g.poke(pt + page, g.peek(pt + page) & ~detail::kRunFree);
  }, SnapshotErrc::kCorrupt, "tail"});
  f.push_back({"page table: a live run marked free", [](Forger& g, S s) {
    const std::size_t page = (s.live_run - address(s.carve)) / kPageSize;
    const std::uint16_t* pt = detail::page_table(s.carve);
    g.poke(pt + page, g.peek(pt + page) | detail::kRunFree);
    g.poke(pt + page + 255, g.peek(pt + page + 255) | detail::kRunFree);
  }, SnapshotErrc::kCorrupt, "free"});
  f.push_back({"free run link into another heap's chunk", [](Forger& g, S s) {
    g.poke(&reinterpret_cast<FreeRun*>(s.free_run)->next, unlisted_chunk());
  }, SnapshotErrc::kCorrupt, "bin"});
  f.push_back({"free run back link", [](Forger& g, S s) {
    g.poke(&reinterpret_cast<FreeRun*>(s.free_run)->prev, address(s.st));
  }, SnapshotErrc::kCorrupt, "links"});
  return f;
}

class ForgedSnapshot : public ::testing::TestWithParam<std::size_t> {};

TEST(ForgedSnapshot, TheUnforgedSubjectRestoresIsUsableAndItsDestructionTouchesNoOtherHeap) {
  HeapScope system(nullptr);
  const Subject& s = subject();
  Bystanders bystanders;
  {
    MemorySource source(s.file.data(), s.file.size());
    HeapPtr heap = restore(source, RestoreOptions{LayoutCheck::kNone});
    EXPECT_EQ(heap->id(), s.id);
    EXPECT_EQ(heap->root(), s.root);
    void* p = heap->allocate(64);
    EXPECT_EQ(p, s.free_small) << "the free list comes back as it was";
    heap->deallocate(p);
    for (int i = 0; i < 70; ++i) heap->allocate(1 << 20);  // and grows
  }
  bystanders.expect_intact("after the restored heap was destroyed");
}

TEST_P(ForgedSnapshot, PassesVerifyButRestoreRefusesItAndTouchesNoOtherHeap) {
  HeapScope system(nullptr);
  const Subject& s = subject();
  const Forgery forgery = forgeries().at(GetParam());
  SCOPED_TRACE(forgery.name);
  Forger forger(s.file);
  forgery.forge(forger, s);
  const Bytes forged = forger.bytes();
  ASSERT_NE(forged, s.file) << "the forgery changed nothing";

  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("reheap-forged-" + std::to_string(::getpid()) + ".snap");
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(forged.data()), static_cast<std::streamsize>(forged.size()));
  }
  if (forgery.expected != SnapshotErrc::kZoneMismatch) {
    EXPECT_NO_THROW(verify_snapshot(path)) << "the checksums must be valid: only the contents lie";
  }

  Bystanders bystanders;
  const ZoneStats before = Zone::stats();
  try {
    RestoreOptions options{LayoutCheck::kNone};
    options.limit_bytes = std::size_t{1} << 30;
    HeapPtr heap = restore(path, options);
    ADD_FAILURE() << "restore accepted the forgery; destroying it";
  } catch (const SnapshotError& e) {
    EXPECT_EQ(e.code(), forgery.expected) << e.what();
    EXPECT_NE(std::string(e.what()).find(forgery.says), std::string::npos)
        << "the message should name the problem (" << forgery.says << "): " << e.what();
  }
  std::filesystem::remove(path);
  const ZoneStats after = Zone::stats();
  EXPECT_EQ(after.live_heaps, before.live_heaps);
  EXPECT_EQ(after.class_chunks_in_use, before.class_chunks_in_use);
  EXPECT_EQ(after.large_chunks_in_use, before.large_chunks_in_use);
  bystanders.expect_intact(forgery.name);
}

INSTANTIATE_TEST_SUITE_P(EveryFieldClass, ForgedSnapshot, ::testing::Range<std::size_t>(0, forgeries().size()),
                         [](const ::testing::TestParamInfo<std::size_t>& param) {
                           std::string name = forgeries().at(param.param).name;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// Fuzz regression: a header whose zone reaches past the 47-bit address space made chunk indexes
// wrap to 32 bits, so the reader handed out runs at addresses far outside the zone that aliased
// a listed chunk (restore refused the zone anyway; verify, info, diff and compact did not).
TEST(ForgedSnapshot, AZoneBeyondTheUserAddressSpaceIsRefusedByTheReader) {
  HeapScope system(nullptr);
  const Subject& s = subject();
  const Bytes forged = Forger(s.file).set_header("zone_size", std::uint64_t{1} << 62).bytes();
  try {
    MemorySource source(forged.data(), forged.size());
    SnapshotReader reader(source, "forged");
    FAIL() << "the reader accepted the header";
  } catch (const SnapshotError& e) {
    EXPECT_EQ(e.code(), SnapshotErrc::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("47-bit"), std::string::npos) << e.what();
  }
}

// The limit is checked against what the state commits, not what the header says.
TEST(ForgedSnapshot, AForgedCommittedFieldDoesNotSlipPastTheRestoreLimit) {
  HeapScope system(nullptr);
  const Subject& s = subject();
  Forger forger(s.file);
  forger.set_header("committed", 4096).poke(&s.st->committed, 4096);
  const Bytes forged = forger.bytes();
  MemorySource source(forged.data(), forged.size());
  RestoreOptions options{LayoutCheck::kNone};
  options.limit_bytes = 1 << 20;
  try {
    restore(source, options);
    FAIL() << "a heap of " << s.file.size() << " bytes restored under a 1 MiB limit";
  } catch (const SnapshotError& e) {
    EXPECT_TRUE(e.code() == SnapshotErrc::kCorrupt || e.code() == SnapshotErrc::kOverLimit) << e.what();
  }
}

}  // namespace
}  // namespace reheap::adversarial
