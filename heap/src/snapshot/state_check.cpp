#include "state_check.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "../heap_fast.h"
#include "format.h"

namespace reheap::detail::snapshot {
namespace {

// A huge block starts one page after its header, or at the first multiple of an alignment above
// a page (alloc_huge), so its offset is a page or a power of two up to kMaxAlignment.
bool valid_huge_offset(std::size_t offset) noexcept {
  return offset == kPageSize ||
         (offset > kPageSize && offset <= kMaxAlignment && (offset & (offset - 1)) == 0);
}

class StateCheck {
 public:
  StateCheck(const SnapshotHeader& h, const std::string& name)
      : h_(h), name_(name), seen_(h.chunks.size(), 0) {}

  std::size_t run() {
    const std::uintptr_t first = chunk_address(first_chunk_of(h_.heap_id));
    state_ = heap_at(first);
    const HeapState& s = *state_;
    if (s.id != h_.heap_id) bad("the state's heap id differs from the header's");
    if (reinterpret_cast<std::uintptr_t>(s.root) != h_.root) bad("the root differs from the header's");
    if (s.limit != h_.limit_bytes) bad("the limit differs from the header's");
    check_state_page(first);
    check_class_chunks(first);
    check_purge_map(first);
    check_large_chunks();
    for (std::size_t i = 0; i < h_.chunks.size(); ++i) {
      if (!seen_[i]) bad("listed chunk " + std::to_string(h_.chunks[i].index) + " is in none of the heap's chunk lists");
    }
    check_bins();
    std::size_t committed = kPageSize * (class_chunks_.size() + s.purge_map_pages) + large_committed_;
    for (unsigned cls = 0; cls < kNumClasses; ++cls) committed += check_class(cls);
    if (committed != s.committed) bad("committed bytes differ from what the chunks and cursors hold");
    if (committed != h_.committed_bytes) bad("the header's committed bytes differ from the state's");
    return committed;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    fail(SnapshotErrc::kCorrupt, name_, "the restored allocator state is inconsistent: " + what);
  }

  std::uintptr_t chunk_address(std::uint64_t index) const noexcept {
    return h_.zone_base + (static_cast<std::uintptr_t>(index) << kChunkShift);
  }

  // The position in the header's chunk list of the chunk holding `a`, or -1 if it is not listed.
  std::ptrdiff_t listed(std::uintptr_t a) const noexcept {
    if (a < h_.zone_base || a - h_.zone_base >= h_.zone_size) return -1;
    const auto index = static_cast<std::uint32_t>((a - h_.zone_base) >> kChunkShift);
    const auto it = std::lower_bound(h_.chunks.begin(), h_.chunks.end(), index,
                                     [](const SnapshotChunk& c, std::uint32_t i) { return c.index < i; });
    if (it == h_.chunks.end() || it->index != index) return -1;
    return it - h_.chunks.begin();
  }

  bool listed_as(std::uintptr_t a, ChunkUse use) const noexcept {
    const std::ptrdiff_t at = listed(a);
    return at >= 0 && h_.chunks[static_cast<std::size_t>(at)].use == use;
  }

  // Class chunks: a list in carving order from the first chunk, ordinals 0, 1, ..., each header
  // at its chunk's header lane, owned by this heap, every one listed as a class chunk once.
  // The first chunk's header page holds its chunk header and the heap's state and nothing else:
  // no live heap writes the rest, and a recycled heap relies on it reading as zero (heap_cache.cpp
  // writes only a new heap's non-zero fields), so bytes there could only be a file's lie, which
  // would then reach a later heap's snapshots.
  void check_state_page(std::uintptr_t first) const {
    const auto* page = reinterpret_cast<const unsigned char*>(class_header(first));
    const auto zero = [](const unsigned char* from, const unsigned char* to) {
      for (; from != to; ++from) {
        if (*from != 0) return false;
      }
      return true;
    };
    if (!zero(page + sizeof(ChunkHeader), page + kStateOffset) ||
        !zero(page + kStateOffset + sizeof(HeapState), page + kPageSize)) {
      bad("the first chunk's header page holds bytes outside its chunk header and the heap's state");
    }
  }

  void check_class_chunks(std::uintptr_t first) {
    const HeapState& s = *state_;
    if (reinterpret_cast<std::uintptr_t>(s.class_head) != first + kHeaderLane * kLaneSize) {
      bad("the class chunk list does not start at the heap's first chunk");
    }
    const ChunkHeader* last = nullptr;
    for (const ChunkHeader* c = s.class_head; c != nullptr; c = c->next) {
      const auto a = reinterpret_cast<std::uintptr_t>(c);
      const std::ptrdiff_t at = listed(a);
      if (at < 0 || h_.chunks[static_cast<std::size_t>(at)].use != ChunkUse::kClass ||
          (a - h_.zone_base) % kChunkSize != kHeaderLane * kLaneSize) {
        bad("the class chunk list names a chunk the header does not list as a class chunk");
      }
      if (seen_[static_cast<std::size_t>(at)]++) bad("the class chunk list has a cycle");
      if (c->kind != ChunkKind::kClass || c->owner != s.id || c->run_chunks != 1 ||
          c->ordinal != class_chunks_.size()) {
        bad("class chunk header at " + hex(a) + " (kind, owner, run length or ordinal)");
      }
      class_chunks_.push_back(c);
      last = c;
    }
    if (s.class_tail != last || s.class_chunks != class_chunks_.size()) {
      bad("the class chunk list's tail or count");
    }
  }

  // The purge map (lane_purge.cpp) fills the first chunk's header lane after the state's page:
  // within the pages the state counts, an entry per class chunk whose bits mark only lanes behind
  // their class's cursor, as many as the state's count by class; zero everywhere else, so that a
  // lane a file marks is one whose blocks the heap could have handed out, and no bit waits
  // beyond the map for a later heap.
  void check_purge_map(std::uintptr_t first) {
    const HeapState& s = *state_;
    if (s.purge_map_pages > kPurgeMapMaxPages) bad("the purge map's page count");
    map_ = reinterpret_cast<const LanePurgeMap*>(first + kHeaderLane * kLaneSize + kPurgeMapOffset);
    const std::size_t in_pages = std::size_t{s.purge_map_pages} * kPageSize / sizeof(LanePurgeMap);
    // The lanes behind each class's cursor. A cursor naming no chunk of the heap is refused by
    // check_class; here it has none behind it.
    std::uint64_t behind[kNumClasses] = {};
    for (unsigned cls = 0; cls < kNumClasses; ++cls) {
      const ClassCursor& k = s.cursor[cls];
      if (std::find(class_chunks_.begin(), class_chunks_.end(), k.chunk) != class_chunks_.end()) {
        behind[cls] = std::uint64_t{k.chunk->ordinal} * kLanesPerClassChunk + k.lane;
      }
    }
    std::uint64_t marked[kNumClasses] = {};
    for (std::uint32_t o = 0; o < kPurgeMapChunks; ++o) {
      const bool may_mark = o < class_chunks_.size() && o < in_pages;
      for (unsigned cls = 0; cls < kNumClasses; ++cls) {
        const std::uint32_t bits = map_[o].lanes[cls];
        if (bits == 0) continue;
        const std::uint64_t last = std::uint64_t{o} * kLanesPerClassChunk + 31 - static_cast<unsigned>(std::countl_zero(bits));
        if (!may_mark || last >= behind[cls]) {
          bad("the purge map marks a lane of size class " + std::to_string(cls) +
              " that is not behind its cursor (class chunk " + std::to_string(o) + ")");
        }
        marked[cls] += static_cast<unsigned>(std::popcount(bits));
      }
    }
    const auto* tail = reinterpret_cast<const unsigned char*>(map_ + kPurgeMapChunks);
    const auto* lane_end = reinterpret_cast<const unsigned char*>(first + (kHeaderLane + 1) * kLaneSize);
    for (; tail != lane_end; ++tail) {
      if (*tail != 0) bad("the first chunk's header lane holds bytes past the purge map");
    }
    for (unsigned cls = 0; cls < kNumClasses; ++cls) {
      if (marked[cls] != s.purged_lanes[cls]) {
        bad("size class " + std::to_string(cls) + ": purged lanes differ from the purge map");
      }
    }
  }

  bool purged(std::uintptr_t a, unsigned cls) const noexcept {
    const std::uint32_t ordinal = class_header(align_down(a - h_.zone_base, kChunkSize) + h_.zone_base)->ordinal;
    if (ordinal >= kPurgeMapChunks) return false;
    const unsigned lane = lane_number(a);
    return lane < kLanesPerClassChunk && ((map_[ordinal].lanes[cls] >> lane) & 1) != 0;
  }

  // Large chunks and huge runs: one doubly linked list; each run listed, whole, with its use.
  void check_large_chunks() {
    const HeapState& s = *state_;
    const ChunkHeader* prev = nullptr;
    std::uint64_t chunks = 0;
    std::uint64_t live_blocks = 0;
    std::uint64_t live_pages = 0;
    std::uint64_t huge_blocks = 0;
    std::size_t huge_bytes = 0;
    std::uint64_t retained_runs = 0;
    std::size_t retained_bytes = 0;
    bool carve_found = s.large_carve == nullptr;
    for (const ChunkHeader* c = s.large_head; c != nullptr; c = c->next) {
      const auto a = reinterpret_cast<std::uintptr_t>(c);
      const std::ptrdiff_t at = listed(a);
      if (at < 0 || (a - h_.zone_base) % kChunkSize != 0 ||
          h_.chunks[static_cast<std::size_t>(at)].use == ChunkUse::kClass) {
        bad("the large chunk list names a chunk the header does not list as large or huge");
      }
      const bool huge = h_.chunks[static_cast<std::size_t>(at)].use == ChunkUse::kHuge;
      if (c->kind != (huge ? ChunkKind::kHuge : ChunkKind::kLarge) || c->owner != s.id ||
          c->prev != prev) {
        bad("large chunk header at " + hex(a) + " (kind, owner or list link)");
      }
      const std::uint32_t run = c->run_chunks;
      if (run == 0 || (!huge && run != 1) || static_cast<std::size_t>(at) + run > h_.chunks.size()) {
        bad("large chunk header at " + hex(a) + ": run length");
      }
      for (std::uint32_t i = 0; i < run; ++i) {
        const SnapshotChunk& listed_chunk = h_.chunks[static_cast<std::size_t>(at) + i];
        if (listed_chunk.index != h_.chunks[static_cast<std::size_t>(at)].index + i ||
            listed_chunk.use != h_.chunks[static_cast<std::size_t>(at)].use) {
          bad("huge run at " + hex(a) + " is not listed whole");
        }
        if (seen_[static_cast<std::size_t>(at) + i]++) bad("the large chunk list has a cycle or overlapping runs");
      }
      chunks += run;
      if (huge) {
        const std::size_t run_bytes = std::size_t{run} * kChunkSize;
        const auto block = reinterpret_cast<std::uintptr_t>(c->huge_block);
        const std::size_t offset = block - a;
        if (block < a || !valid_huge_offset(offset) || c->huge_size == 0 ||
            c->huge_size % kPageSize != 0 || c->huge_size > run_bytes - offset) {
          bad("huge block at " + hex(a) + ": its block lies outside its run");
        }
        if (c->retained_seq == 0) {
          ++huge_blocks;
          huge_bytes += c->huge_size;
        } else {
          if (c->retained_seq > s.retain_seq) bad("huge run at " + hex(a) + ": kept after the heap's last keeping");
          ++retained_runs;
          retained_bytes += kPageSize + c->huge_size;
        }
        large_committed_ += kPageSize + c->huge_size;
      } else {
        if (c->frontier < kFirstRunPage || c->frontier > kPagesPerChunk) {
          bad("large chunk at " + hex(a) + ": frontier outside the chunk");
        }
        check_page_table(c, &live_blocks, &live_pages);
        large_committed_ += std::size_t{c->frontier} * kPageSize;
        carve_found |= c == s.large_carve;
      }
      prev = c;
    }
    if (!carve_found) bad("the large chunk carved from is not one of the heap's large chunks");
    if (chunks != s.large_chunks) bad("the large chunk count");
    if (s.held_run != nullptr) {
      // The held run (page_runs.cpp) is an allocated run the page tables above tiled, in no live
      // count: check_page_table noted its length when it met the run's head.
      if (held_run_length_ == 0 || held_run_length_ > kHeldRunMaxPages) {
        bad("the held page run is not an allocated run of at most " + std::to_string(kHeldRunMaxPages) +
            " pages of a large chunk");
      }
      if (s.held_run_pages != held_run_length_) bad("the held page run's length");
      live_blocks -= 1;
      live_pages -= held_run_length_;
    } else if (s.held_run_pages != 0) {
      bad("the held page run's length");
    }
    if (live_blocks != s.large_live_blocks || live_pages != s.large_live_pages) {
      bad("large block accounting differs from the page tables");
    }
    if (huge_blocks != s.huge_live_blocks || huge_bytes != s.huge_live_bytes) {
      bad("huge block accounting differs from the huge runs");
    }
    if (retained_runs != s.retained_huge_runs || retained_bytes != s.retained_huge_bytes) {
      bad("retained huge runs differ from the heap's count of them");
    }
  }

  // The page table tiles [kFirstRunPage, frontier) with runs: a head entry with the length, a
  // tail entry with the same length and free flag, no two free runs side by side (they are
  // merged on free).
  void check_page_table(const ChunkHeader* c, std::uint64_t* live_blocks, std::uint64_t* live_pages) {
    const std::uint16_t* pt = page_table(const_cast<ChunkHeader*>(c));
    bool previous_free = false;
    for (std::size_t p = kFirstRunPage; p < c->frontier;) {
      const std::uint16_t head = pt[p];
      const std::size_t length = head & kRunLength;
      const bool free = (head & kRunFree) != 0;
      if ((head & kRunHead) == 0 || length == 0 || length > c->frontier - p) {
        bad("page table of the large chunk at " + hex(reinterpret_cast<std::uintptr_t>(c)) +
            ": bad run at page " + std::to_string(p));
      }
      if (length > 1) {
        const std::uint16_t tail = pt[p + length - 1];
        if ((tail & kRunLength) != length || (tail & kRunHead) != 0 || ((tail & kRunFree) != 0) != free) {
          bad("page table of the large chunk at " + hex(reinterpret_cast<std::uintptr_t>(c)) +
              ": run at page " + std::to_string(p) + " has a bad tail entry");
        }
      }
      if (free) {
        if (previous_free) bad("two free page runs side by side at page " + std::to_string(p));
        free_runs_.push_back(reinterpret_cast<std::uintptr_t>(c) + p * kPageSize);
      } else {
        ++*live_blocks;
        *live_pages += length;
        if (reinterpret_cast<std::uintptr_t>(c) + p * kPageSize == reinterpret_cast<std::uintptr_t>(state_->held_run)) {
          held_run_length_ = length;
        }
      }
      previous_free = free;
      p += length;
    }
  }

  // Every free run is in exactly the bin of its length, once; the bin mask says which bins hold
  // runs.
  void check_bins() {
    const HeapState& s = *state_;
    std::sort(free_runs_.begin(), free_runs_.end());
    std::vector<char> binned(free_runs_.size(), 0);
    std::size_t total = 0;
    for (unsigned b = 0; b < kNumBins; ++b) {
      const bool marked = (s.bin_mask[b / 64] >> (b % 64)) & 1;
      if (marked != (s.bins[b] != nullptr)) bad("bin mask of bin " + std::to_string(b));
      const FreeRun* prev = nullptr;
      for (const FreeRun* r = s.bins[b]; r != nullptr; r = r->next) {
        const auto a = reinterpret_cast<std::uintptr_t>(r);
        const auto it = std::lower_bound(free_runs_.begin(), free_runs_.end(), a);
        if (it == free_runs_.end() || *it != a) bad("bin " + std::to_string(b) + " holds " + hex(a) + ", not a free run");
        const std::size_t at = static_cast<std::size_t>(it - free_runs_.begin());
        if (binned[at]++ || ++total > free_runs_.size()) bad("bin " + std::to_string(b) + " has a cycle");
        if (r->prev != prev) bad("bin " + std::to_string(b) + ": list links");
        const ChunkHeader* c = large_header(align_down(a - h_.zone_base, kChunkSize) + h_.zone_base);
        const std::size_t length = page_table(const_cast<ChunkHeader*>(c))[(a & (kChunkSize - 1)) >> kPageShift] & kRunLength;
        if ((length < kNumBins - 1 ? length : kNumBins - 1) != b) {
          bad("bin " + std::to_string(b) + " holds a run of " + std::to_string(length) + " pages");
        }
        prev = r;
      }
    }
    for (unsigned b = kNumBins; b < sizeof s.bin_mask * 8; ++b) {
      if ((s.bin_mask[b / 64] >> (b % 64)) & 1) bad("bin mask names a bin that does not exist");
    }
    if (total != free_runs_.size()) bad("a free page run is in no bin");
  }

  // A class's cursor lies in one of its own lanes, its carved count matches the cursor, and its
  // free list holds only carved blocks of its lanes, at most `carved` of them (so no cycle).
  // Returns the bytes the class has committed: whole lanes behind the cursor, and the current
  // lane's window.
  std::size_t check_class(unsigned cls) {
    const HeapState& s = *state_;
    const ClassCursor& k = s.cursor[cls];
    const std::size_t size = kClassSize[cls];
    const std::string what = "size class " + std::to_string(cls) + " (" + std::to_string(size) + " bytes)";
    if (k.chunk == nullptr) {
      if (k.cur != nullptr || k.limit != nullptr || k.lane != 0 || k.carved != 0 || s.free[cls] != nullptr) {
        bad(what + ": blocks without a cursor");
      }
      return 0;
    }
    const ChunkHeader* chunk = k.chunk;
    if (std::find(class_chunks_.begin(), class_chunks_.end(), chunk) == class_chunks_.end()) {
      bad(what + ": the cursor is not in one of the heap's class chunks");
    }
    if (k.lane >= kLanesPerClassChunk) bad(what + ": the cursor's lane number");
    const std::uintptr_t lane = chunk_of(chunk, true) + lane_offset(cls, k.lane);
    const auto cur = reinterpret_cast<std::uintptr_t>(k.cur);
    const auto limit = reinterpret_cast<std::uintptr_t>(k.limit);
    if (cur < lane || cur > lane + kLaneSize || (cur - lane) % size != 0 || limit < cur ||
        limit > lane + kLaneSize || limit % kPageSize != 0) {
      bad(what + ": the cursor lies outside its lane");
    }
    const std::size_t per_lane = kLaneSize / size;
    const std::uint64_t lanes_behind = std::uint64_t{chunk->ordinal} * kLanesPerClassChunk + k.lane;
    if (k.carved != lanes_behind * per_lane + (cur - lane) / size) bad(what + ": carved count");
    // Brent's cycle detection: a cycle is found within about twice its distance from the head
    // plus its length, so the walk costs what the file holds, not what a forged `carved` says.
    std::uint64_t count = 0;
    const void* tortoise = nullptr;
    std::uint64_t power = 1;
    std::uint64_t steps = 0;
    const std::uint64_t purged_blocks = std::uint64_t{s.purged_lanes[cls]} * per_lane;
    for (const void* p = s.free[cls]; p != nullptr; p = *static_cast<void* const*>(p)) {
      if (++count + purged_blocks > k.carved) bad(what + ": the free list is longer than what was carved (a cycle?)");
      check_free_block(p, cls, k, what);
      if (p == tortoise) bad(what + ": the free list has a cycle");
      if (++steps == power) {
        tortoise = p;
        power *= 2;
        steps = 0;
      }
    }
    return (lanes_behind - s.purged_lanes[cls]) * align_up(per_lane * size, kPageSize) + (limit - lane);
  }

  void check_free_block(const void* p, unsigned cls, const ClassCursor& k, const std::string& what) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    const std::size_t size = kClassSize[cls];
    // Free lists mostly stay in one chunk for long stretches: the last chunk found is remembered,
    // which keeps the check near one cache line per block (a 1 GiB heap of free 64-byte blocks
    // has 16 million of them).
    if (a - h_.zone_base >= h_.zone_size) bad(what + ": free block " + hex(a) + " lies outside the zone");
    const std::uintptr_t base = align_down(a - h_.zone_base, kChunkSize) + h_.zone_base;
    if (base != last_class_chunk_) {
      if (!listed_as(a, ChunkUse::kClass)) bad(what + ": free block " + hex(a) + " is not in one of the class's lanes");
      last_class_chunk_ = base;
    }
    if (class_of_address(a) != cls) bad(what + ": free block " + hex(a) + " is not in one of the class's lanes");
    const std::size_t offset = a & (kLaneSize - 1);
    const ChunkHeader* chunk = class_header(base);
    const unsigned lane = lane_number(a);
    const bool carved = chunk->ordinal < k.chunk->ordinal ||
                        (chunk->ordinal == k.chunk->ordinal &&
                         (lane < k.lane || (lane == k.lane && p < k.cur)));
    if (offset % size != 0 || offset + size > kLaneSize || lane >= kLanesPerClassChunk || !carved) {
      bad(what + ": free block " + hex(a) + " is not a carved block");
    }
    if (purged(a, cls)) bad(what + ": free block " + hex(a) + " lies in a purged lane");
    if (kChecks && h_.checked_build) {
      // The checked build's shadow lane marks free blocks (class_lanes.cpp). A release build's
      // file has no shadow: restore builds one from these lists once they have passed this check
      // (checked_conversion.h).
      const std::size_t bit = offset >> 3;
      const auto* words = reinterpret_cast<const std::uint64_t*>(base + shadow_offset(a));
      if (((words[bit / 64] >> (bit % 64)) & 1) == 0) bad(what + ": free block " + hex(a) + " is not marked free");
    }
  }

  static std::string hex(std::uintptr_t a) {
    char text[24];
    std::snprintf(text, sizeof text, "%#llx", static_cast<unsigned long long>(a));
    return text;
  }

  const SnapshotHeader& h_;
  const std::string& name_;
  const HeapState* state_ = nullptr;
  const LanePurgeMap* map_ = nullptr;
  std::vector<char> seen_;  // by position in h_.chunks: reached through a chunk list
  std::vector<const ChunkHeader*> class_chunks_;  // by ordinal
  std::vector<std::uintptr_t> free_runs_;         // first pages of free large runs
  std::size_t held_run_length_ = 0;  // pages of the allocated run the state holds (0: none met)
  std::size_t large_committed_ = 0;
  std::uintptr_t last_class_chunk_ = 0;  // a listed class chunk a free block was found in (0: none yet)
};

}  // namespace

std::size_t check_restored_state(const SnapshotHeader& h, const std::string& name) {
  return StateCheck(h, name).run();
}

}  // namespace reheap::detail::snapshot
