// The heap's own state, and the header at the start of each of its chunks. Both live inside the
// heap's chunks (the state in the header lane of its first class chunk), so that saving the
// chunks saves the allocator too.
//
// Invariants:
//   - id names the heap's first class chunk and its generation there (zone_impl.h); the owner
//     map says `id` for every chunk the heap owns, and the state sits at a fixed place in its
//     first chunk.
//   - free[c] is a singly linked list through the first word of free blocks of class c.
//   - cursor[c] is where class c carves its next block: blocks are carved in lane order
//     (chunk ordinal, lane number, offset), so "carved" is exactly "before the cursor".
//   - Large chunks: page_table[p] describes the run starting (kRunHead) or ending at page p;
//     entries inside a run are stale and never read. A free run is also linked in bins[].
//   - Huge runs whose retained_seq is not 0 hold no live block: freed, kept for reuse
//     (retention.cpp); they are counted in retained_huge_*, in committed, and in no live count.
//   - Pages the heap has never touched read as zero, so zero-filled fields need no initialising.
#pragma once

#include <cstddef>
#include <cstdint>

#include "layout.h"
#include "reheap/heap.h"
#include "zone_impl.h"

namespace reheap::detail {

enum class ChunkKind : std::uint32_t { kClass = 0xC1A55, kLarge = 0x1A26E, kHuge = 0x40CE };

struct ChunkHeader {
  ChunkKind kind;
  std::uint32_t run_chunks; // huge: chunks in the run; otherwise 1
  HeapId owner;
  ChunkHeader* next;        // class chunks: in carving order; large chunks: the large list
  ChunkHeader* prev;        // large list only (huge runs leave it on free)
  std::uint32_t ordinal;    // class chunks: position in the class list
  std::uint32_t frontier;   // large: first page never carved
  char* huge_block;         // huge: the block
  std::size_t huge_size;    // huge: usable bytes (page multiple)
  // Huge: 0 while the block is live; once it is freed and the heap keeps the run for a later huge
  // block (retention.cpp), the heap's retain_seq at that free.
  std::uint64_t retained_seq;
};

// Page-table entry of a large chunk: run length in pages, plus flags.
inline constexpr std::uint16_t kRunLength = 0x3fff;
inline constexpr std::uint16_t kRunHead = 0x4000;  // first page of a run
inline constexpr std::uint16_t kRunFree = 0x8000;  // the run is free (set on head and tail)

struct FreeRun {  // lives in the first page of a free page run
  FreeRun* prev;
  FreeRun* next;
  // The run's other pages were discarded since it became free (purge_free_runs); 0 as soon as a
  // freed neighbour is merged into it.
  std::uint64_t purged;
};

inline constexpr unsigned kNumBins = kMaxLargePages + 1;  // bin n: runs of n pages; last: more
inline constexpr std::size_t kHeldRunMaxPages = 64;       // HeapState::held_run: 256 KiB at most

struct ClassCursor {
  char* cur = nullptr;    // next block to carve
  char* limit = nullptr;  // end of the committed window in the current lane
  ChunkHeader* chunk = nullptr;
  std::uint32_t lane = 0;  // the lane's number among the class's lanes of `chunk` (layout.h)
  std::uint64_t carved = 0;  // blocks ever carved
};

struct HeapState : Heap {
  constexpr explicit HeapState(HeapId heap_id) noexcept : id(heap_id) {}

  // Hot: read by every allocation and free.
  HeapId id;
  void* free[kNumClasses] = {};

  // Warm: carving.
  ClassCursor cursor[kNumClasses] = {};

  // Cold: accounting, chunk lists, page runs.
  std::size_t limit = kUnlimited;
  std::size_t committed = 0;
  std::uint64_t failed = 0;
  // The madvise calls made for the heap: they follow from its own frees and purges. The word
  // before them held the mprotect calls, which depend on the process's zone and are counted in
  // its ChunkTaking record now (chunk_taking.cpp); no code writes it any more (a snapshot of an
  // earlier build may hold its count there), and it stays so that the fields after it keep their
  // places in such snapshots.
  std::uint64_t unused_mprotect = 0;
  std::uint64_t madvise_calls = 0;
  void* root = nullptr;
  ChunkHeader* class_head = nullptr;
  ChunkHeader* class_tail = nullptr;
  std::uint32_t class_chunks = 0;
  std::uint32_t large_chunks = 0;  // counting every chunk of huge runs
  ChunkHeader* large_head = nullptr;  // large chunks and huge runs
  ChunkHeader* large_carve = nullptr; // the large chunk new runs are carved from
  std::uint64_t large_live_blocks = 0;
  std::uint64_t large_live_pages = 0;
  std::uint64_t huge_live_blocks = 0;
  std::size_t huge_live_bytes = 0;
  std::uint64_t bin_mask[(kNumBins + 63) / 64] = {};
  FreeRun* bins[kNumBins] = {};
  // A recycled heap (heap_cache.h): how far into its first chunk the previous heap there carved,
  // by class, as an offset from the chunk; 0 once nothing of it is ahead of the cursor. Carving
  // zeroes a page below that before handing out blocks from it.
  std::uint32_t recycled_dirty_end[kNumClasses] = {};
  // Retention (retention.cpp): freed huge runs kept for reuse. Everything here follows from the
  // heap's own allocations and frees, never from time, so that keeping a run or giving it back
  // changes no later address the same way in a run and in its replay.
  std::size_t retain_limit = 0;        // bytes of retained runs kept at most (0: none kept)
  std::size_t retained_huge_bytes = 0; // header pages and blocks of the retained runs
  std::uint32_t retained_huge_runs = 0;
  std::uint64_t retain_seq = 0;        // frees that kept a run, ever
  // The page run freed last, if at most kHeldRunMaxPages long (page_runs.cpp): still marked
  // allocated in its page table, in no bin and no live count, so that the next request of its
  // length takes it back without a bin search, a split or a merge. Freed for real when the next
  // run is held, and before a purge or a reclaim.
  char* held_run = nullptr;
  std::uint64_t held_run_pages = 0;  // its length, so that a request of another misses unread
  // Purged lanes (lane_purge.cpp): lanes behind a class's cursor whose blocks were all free, their
  // pages given back to the OS and their blocks off the free list; counted by class, marked in the
  // purge map. The map's pages put in use so far (from the first chunk's header lane) count in
  // committed.
  std::uint32_t purged_lanes[kNumClasses] = {};
  std::uint32_t purge_map_pages = 0;
};

// An idle heap's metadata is one page: chunk header and state together.
static_assert(sizeof(ChunkHeader) <= 64 && 64 + sizeof(HeapState) <= kPageSize);

// The purge map: for each class chunk, by ordinal, one word per class whose bit n says that the
// class's lane number n there is purged. It fills the first chunk's header lane after the state's
// page, so a heap whose lanes were never purged never touches it; chunks past kPurgeMapChunks
// (about 1.4 GiB of one class) keep their lanes.
struct LanePurgeMap {
  std::uint32_t lanes[kNumClasses];
};
inline constexpr std::size_t kPurgeMapOffset = kPageSize;  // in the first chunk's header lane
inline constexpr std::uint32_t kPurgeMapChunks = (kLaneSize - kPurgeMapOffset) / sizeof(LanePurgeMap);
inline constexpr std::uint32_t kPurgeMapMaxPages = (kLaneSize - kPurgeMapOffset) / kPageSize;
static_assert(kLanesPerClassChunk <= 32, "a purge map word holds one bit per lane");

inline HeapState* state(Heap* h) noexcept { return static_cast<HeapState*>(h); }
inline const HeapState* state(const Heap* h) noexcept { return static_cast<const HeapState*>(h); }

// Where a heap's state lives, given its id.
inline constexpr std::size_t kStateOffset = 64;  // the state starts on its own cache line
inline HeapState* heap_at(std::uintptr_t first_chunk) noexcept {
  return reinterpret_cast<HeapState*>(first_chunk + kHeaderLane * kLaneSize + kStateOffset);
}
inline ChunkHeader* class_header(std::uintptr_t chunk) noexcept {
  return reinterpret_cast<ChunkHeader*>(chunk + kHeaderLane * kLaneSize);
}
inline ChunkHeader* large_header(std::uintptr_t chunk) noexcept {
  return reinterpret_cast<ChunkHeader*>(chunk);
}
inline std::uint16_t* page_table(ChunkHeader* large) noexcept {
  return reinterpret_cast<std::uint16_t*>(reinterpret_cast<char*>(large) + kPageSize);
}
inline std::uintptr_t chunk_of(const ChunkHeader* h, bool is_class) noexcept {
  return reinterpret_cast<std::uintptr_t>(h) - (is_class ? kHeaderLane * kLaneSize : 0);
}

// The state used when no heap is current: its free lists are always empty and its id matches
// no chunk, so the fast paths fall through to the system allocator without a null test.
extern constinit HeapState g_no_heap;

// Charges `bytes` against the heap's limit. Past the limit, an allocation first has the heap give
// back what it holds but does not use (reclaim.cpp), never touching `carving` (the class being
// carved, whose cursor the caller holds); false if that is not enough, which counts as a failed
// allocation unless the caller has a fallback (`attempt`: an in-place reallocation).
enum class Charge { kAllocation, kAttempt };
inline constexpr unsigned kNoClass = kNumClasses;
bool charge_slow(HeapState* h, std::size_t bytes, Charge kind, unsigned carving) noexcept;
inline bool charge(HeapState* h, std::size_t bytes, Charge kind = Charge::kAllocation,
                   unsigned carving = kNoClass) noexcept {
  if (bytes > h->limit || h->committed > h->limit - bytes) [[unlikely]] {
    return charge_slow(h, bytes, kind, carving);
  }
  h->committed += bytes;
  return true;
}

// Memory a heap holds but does not use, given back to the OS and uncharged: a size class none of
// whose blocks is live (its lanes' pages; it carves from the start again), and the large chunk
// new runs are carved from when all its runs are free. Both leave every invariant of the state
// intact (restore's state check holds before and after).
void reset_idle_class(HeapState* h, unsigned cls) noexcept;
void reset_empty_carve_chunk(HeapState* h) noexcept;
// Frees the held page run (HeapState::held_run) for real, merging it with its free neighbours.
void release_held_run(HeapState* h) noexcept;

// Retention (retention.cpp; zone.h, "Retention"). A freed huge run is kept (retain_huge, false
// when the heap may not keep it) and taken again by a later huge block of `usable` bytes at
// `offset` in a run of at least `chunks` chunks (take_retained: null if none fits, `*refused`
// if one fit but the limit refused its growth, the run then given back); give_back_all_retained
// returns every kept run to the zone (false if there was none); purge_retained discards the
// pages of the kept runs, which stay kept; forget_retained ends the retention of every run of a
// heap about to be discarded. init_retention gives a new heap the zone's retain limit.
bool retain_huge(HeapState* h, ChunkHeader* c) noexcept;
ChunkHeader* take_retained(HeapState* h, std::size_t usable, std::size_t offset, std::size_t chunks,
                           bool* refused) noexcept;
bool give_back_all_retained(HeapState* h) noexcept;
std::size_t purge_retained(HeapState* h) noexcept;
void forget_retained(HeapState* h) noexcept;
void init_retention(HeapState* h) noexcept;
std::size_t resident_retained_bytes(const HeapState* h) noexcept;
std::uint64_t purge_calls(const HeapState* h) noexcept;  // madvise calls made purging
void count_purge_calls(HeapState* h, std::uint64_t calls) noexcept;
// Discards the pages of the heap's free page runs, all but the first of each (it holds the run's
// links); returns the bytes discarded. Freed memory reads as zero afterwards: bytes a digest reads
// change, so the runtime never does this to a recorded reactor (zone.h, "Retention").
std::size_t purge_free_runs(HeapState* h) noexcept;

// Purged lanes (lane_purge.cpp). purge_free_lanes gives back the pages of every lane behind its
// class's cursor none of whose blocks is live and returns the bytes given back; like
// purge_free_runs it changes bytes a digest reads. revive_purged_lane puts the lowest purged lane
// of `cls` back on its free list and returns its first block, handed out (null: none, or the lane
// would pass the limit: the caller carves instead). forget_purged_lanes clears the class's marks
// (its lanes are being discarded). purge_map is the heap's map; purged_blocks the class's blocks
// in purged lanes.
std::size_t purge_free_lanes(HeapState* h) noexcept;
void* revive_purged_lane(HeapState* h, unsigned cls) noexcept;
void forget_purged_lanes(HeapState* h, unsigned cls) noexcept;
inline LanePurgeMap* purge_map(const HeapState* h) noexcept {
  return reinterpret_cast<LanePurgeMap*>(chunk_of(h->class_head, true) + kHeaderLane * kLaneSize +
                                         kPurgeMapOffset);
}
inline std::uint64_t purged_blocks(const HeapState* h, unsigned cls) noexcept {
  return std::uint64_t{h->purged_lanes[cls]} * (kLaneSize / kClassSize[cls]);
}
// The bytes a class's whole lane commits: its blocks, rounded up to pages.
constexpr std::size_t whole_lane_bytes(unsigned cls) noexcept {
  return align_up(kLaneSize / kClassSize[cls] * kClassSize[cls], kPageSize);
}

// Unlinks huge run `c` and gives it back to the zone (its pages discarded); the caller has
// already taken its bytes out of `committed`.
void release_huge_run(HeapState* h, ChunkHeader* c) noexcept;

// Zeroes what the previous heap of a recycled chunk left in [from, to) of class cls's lane.
void clear_recycled(HeapState* h, unsigned cls, char* from, char* to) noexcept;

// Taking new zone chunks (chunk_taking.cpp): every chunk a live heap takes after its first comes
// through take_chunks (0 if none could be taken), where a ChunkPlacement may steer it. The
// mprotect calls made for a heap are counted in the zone's record of it, from its creation on.
std::uintptr_t take_chunks(HeapState* h, Half half, std::size_t count) noexcept;
void note_created(const HeapState* h, std::uint64_t mprotect_calls) noexcept;
std::uint64_t mprotect_calls(const HeapState* h) noexcept;

// Slow paths, one concept per file: class_lanes.cpp, page_runs.cpp.
void* carve_block(HeapState* h, unsigned cls) noexcept;
void double_free_at_head(HeapState* h, void* p) noexcept;
void check_class_free(HeapState* h, void* p, unsigned cls) noexcept;
void mark_class_allocated(void* p) noexcept;
// Sets the shadow bit of a block on a free list: restore's rebuilding of a checked heap's shadow
// from a release snapshot (snapshot/checked_conversion.cpp); frees set it in check_class_free.
void mark_class_free(void* p) noexcept;
void* alloc_pages(HeapState* h, std::size_t size, std::size_t alignment) noexcept;
void free_pages(HeapState* h, void* p) noexcept;
std::size_t page_block_size(const HeapState* h, const void* p) noexcept;
std::size_t free_run_pages(const HeapState* h) noexcept;  // O(free runs)
void* realloc_pages(HeapState* h, void* p, std::size_t new_size) noexcept;
void release_chunk_pages(HeapState* h, ChunkHeader* chunk, bool is_class) noexcept;
// The chunks of the run headed by `c` that the heap really owns: 1 for class and large chunks;
// for a huge run, its length capped at the first chunk the owner map gives to another heap.
// Headers are the heap's own writable memory: whatever a bug wrote there, ending the heap or
// freeing a block never discards or gives back another heap's chunks.
std::size_t owned_run_chunks(const HeapState* h, const ChunkHeader* c) noexcept;
void unpoison_free_blocks(HeapState* h) noexcept;

// Ends a heap: tells its chunk observer, discards the pages of every chunk run (the state last:
// `h` reads as zero afterwards) and hands each run to `done`, which gives it back to the zone
// (Heap::destroy) or keeps it for the heap restored in its place (restore's `replace`).
using ChunkRunDone = void (*)(void* context, std::uintptr_t first, std::size_t count, HeapId owner);
void discard_heap(HeapState* h, void* context, ChunkRunDone done) noexcept;
// discard_heap's first part: every chunk but the first class chunk, which holds the state and
// which it returns, still committed (the heap cache keeps it).
ChunkHeader* discard_all_but_state(HeapState* h, void* context, ChunkRunDone done) noexcept;
void poison_free_blocks(HeapState* h) noexcept;

// Under AddressSanitizer, freed class blocks are poisoned; whatever reads a heap's pages whole
// (a snapshot, a digest) reads them like any other byte and hands them to code that may be
// instrumented. Only on the heap's own thread, between events.
class UnpoisonedFreeBlocks {
 public:
  explicit UnpoisonedFreeBlocks(HeapState* h) noexcept : h_(h) { unpoison_free_blocks(h_); }
  ~UnpoisonedFreeBlocks() { poison_free_blocks(h_); }
  UnpoisonedFreeBlocks(const UnpoisonedFreeBlocks&) = delete;
  UnpoisonedFreeBlocks& operator=(const UnpoisonedFreeBlocks&) = delete;

 private:
  HeapState* h_;
};

}  // namespace reheap::detail
