// Carving fixed-size blocks out of class lanes: the slow path behind an empty free list.
//
// A class carves its lanes in order: lanes 0..31 of its current chunk (layout.h: the first in the
// chunk's group 0, the rest in one range), then the next class chunk of the heap (taking a new one
// from the zone when there is none). Inside a lane it bumps a cursor through a committed window
// that grows a page at a time, so the heap's committed bytes (and its limit) follow the pages
// actually touched, and an idle heap stays a few pages. A class that has already carved
// kWholeLaneAfter bytes commits each new lane whole instead, in one
// MADV_POPULATE_WRITE: it will fill the lane, and one call costs less than a fault per page.
#include <cstring>

#include "heap_fast.h"
#include "os/memory.h"
#include "report.h"

namespace reheap::detail {
namespace {

char* lane_start(const ClassCursor& k, unsigned cls) noexcept {
  return reinterpret_cast<char*>(chunk_of(k.chunk, true) + lane_offset(cls, k.lane));
}

// Past this many bytes carved, a class's next lanes are committed whole (8 lanes: the zero pages
// a snapshot of such a heap may carry at the end of the class's last lane stay under 12% of it).
constexpr std::size_t kWholeLaneAfter = 8 * kLaneSize;

// Moves class cls's committed window up to `limit`, already charged; a recycled heap's first chunk
// zeroes what its earlier lives left there first.
void extend_window(HeapState* h, unsigned cls, char* limit) noexcept {
  ClassCursor& k = h->cursor[cls];
  if (h->recycled_dirty_end[cls] != 0 && k.chunk == h->class_head) clear_recycled(h, cls, k.limit, limit);
  k.limit = limit;
}

// Commits the fresh lane the cursor is at whole for a class that carved past kWholeLaneAfter, the
// pages populated in one call: seed 000's lines of 20M blocks take 18-24% less time than with a
// fault per page. Changes nothing if the class is lighter or the limit has no room for the whole
// lane (the caller then grows the window a page at a time, as for any class).
void commit_whole_lane(HeapState* h, unsigned cls) noexcept {
  ClassCursor& k = h->cursor[cls];
  if (k.carved * kClassSize[cls] < kWholeLaneAfter) return;
  const std::size_t bytes = whole_lane_bytes(cls);
  if (!charge(h, bytes, Charge::kAttempt, cls)) return;
  extend_window(h, cls, k.cur + bytes);
  (void)os::populate(reinterpret_cast<std::uintptr_t>(k.cur), bytes);  // failure costs only faults
}

}  // namespace

// Takes a new class chunk from the zone and appends it to the heap's class list.
ChunkHeader* add_class_chunk(HeapState* h, unsigned carving) noexcept {
  if (!charge(h, kPageSize, Charge::kAllocation, carving)) return nullptr;
  const std::uintptr_t chunk = take_chunks(h, Half::kClass, 1);
  if (chunk == 0) {
    h->committed -= kPageSize;
    ++h->failed;
    return nullptr;
  }
  ChunkHeader* c = class_header(chunk);
  c->kind = ChunkKind::kClass;
  c->owner = h->id;
  c->run_chunks = 1;
  c->ordinal = h->class_chunks++;
  h->class_tail->next = c;
  h->class_tail = c;
  return c;
}

REHEAP_SLOW_PATH void* carve_block(HeapState* h, unsigned cls) noexcept {
  if (h->id == kNoHeapId) return nullptr;
  ClassCursor& k = h->cursor[cls];
  // Lanes given back by a purge first (lane_purge.cpp): their address space is the heap's already.
  // A class that never carved has none, and a new heap's first blocks skip the state's cold line.
  if (k.chunk != nullptr && h->purged_lanes[cls] != 0) {
    if (void* p = revive_purged_lane(h, cls)) return p;
  }
  const std::size_t size = kClassSize[cls];
  if (k.chunk == nullptr || k.cur + size > lane_start(k, cls) + kLaneSize) {
    // The lane is used up (or the class never carved): move to the next lane.
    if (k.chunk == nullptr) {
      k.chunk = h->class_head;
      k.lane = 0;
    } else if (k.lane + 1 < kLanesPerClassChunk) {
      ++k.lane;
    } else {
      ChunkHeader* next = k.chunk->next != nullptr ? k.chunk->next : add_class_chunk(h, cls);
      if (next == nullptr) return nullptr;
      k.chunk = next;
      k.lane = 0;
    }
    k.cur = k.limit = lane_start(k, cls);
    commit_whole_lane(h, cls);
  }
  if (k.cur + size > k.limit) {
    char* const lane_end = lane_start(k, cls) + kLaneSize;
    char* new_limit = reinterpret_cast<char*>(
        align_up(reinterpret_cast<std::uintptr_t>(k.cur + size), kPageSize));
    if (new_limit > lane_end) new_limit = lane_end;
    if (!charge(h, static_cast<std::size_t>(new_limit - k.limit), Charge::kAllocation, cls)) return nullptr;
    extend_window(h, cls, new_limit);
  }
  void* p = k.cur;
  k.cur += size;
  ++k.carved;
  return p;
}

// The checked build's record of which blocks are free: one bit per 8 bytes of each class lane,
// where layout.h's shadow_offset puts them (lanes no block ever occupies).
namespace {

// The bytes of the bits of the lane starting at `lane`.
unsigned char* shadow_of_lane(std::uintptr_t lane) noexcept {
  return reinterpret_cast<unsigned char*>(align_down(lane, kChunkSize) + shadow_offset(lane));
}

struct ShadowBit {
  std::uint64_t* word;
  std::uint64_t mask;
};

ShadowBit shadow_bit(const void* p) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const std::size_t bit = (a & (kLaneSize - 1)) >> 3;
  auto* words = reinterpret_cast<std::uint64_t*>(shadow_of_lane(a));
  return {words + bit / 64, std::uint64_t{1} << (bit % 64)};
}

}  // namespace

void reset_idle_class(HeapState* h, unsigned cls) noexcept {
  ClassCursor& k = h->cursor[cls];
  if (k.chunk == nullptr) return;
  // Counting stops past `carved`: a list that long has a cycle (a release build's double free
  // that was not at the list's head), and the class is then not idle.
  std::uint64_t free_blocks = 0;
  for (void* p = h->free[cls]; p != nullptr && free_blocks <= k.carved; p = *static_cast<void**>(p)) {
    ++free_blocks;
  }
  if (free_blocks + purged_blocks(h, cls) != k.carved) return;  // some block is live
  const std::size_t whole_lane = whole_lane_bytes(cls);
  std::size_t released = 0;
  for (ChunkHeader* c = h->class_head; c != nullptr && c->ordinal <= k.chunk->ordinal; c = c->next) {
    const std::uint32_t lanes = c == k.chunk ? k.lane + 1 : kLanesPerClassChunk;
    for (std::uint32_t n = 0; n < lanes; ++n) {
      const std::uintptr_t lane = chunk_of(c, true) + lane_offset(cls, n);
      const std::size_t bytes =
          c == k.chunk && n == k.lane ? static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(k.limit) - lane)
                                      : whole_lane;
      if (bytes == 0) continue;
      if (os::discard(lane, bytes) == 0) ++h->madvise_calls;
      REHEAP_UNPOISON(reinterpret_cast<void*>(lane), bytes);
      if constexpr (kChecks) std::memset(shadow_of_lane(lane), 0, kShadowPerLane);
      released += bytes;
    }
  }
  // Purged lanes were uncharged when they were purged.
  h->committed -= released - std::size_t{h->purged_lanes[cls]} * whole_lane;
  forget_purged_lanes(h, cls);
  k = ClassCursor{};
  h->free[cls] = nullptr;
}

void clear_recycled(HeapState* h, unsigned cls, char* from, char* to) noexcept {
  // A class's lanes lie in carving order at rising addresses, so everything below the end the
  // previous heap reached is its, and a window at or past it is the first untouched one.
  char* const end = reinterpret_cast<char*>(chunk_of(h->class_head, true) + h->recycled_dirty_end[cls]);
  if (from < end) std::memset(from, 0, static_cast<std::size_t>((to < end ? to : end) - from));
  if (to >= end) h->recycled_dirty_end[cls] = 0;
}

REHEAP_SLOW_PATH void double_free_at_head(HeapState* h, void* p) noexcept {
  report_misuse(Misuse::kDoubleFree, p, h->id, h->id);
}

void mark_class_allocated(void* p) noexcept {
  ShadowBit s = shadow_bit(p);
  *s.word &= ~s.mask;
}

void mark_class_free(void* p) noexcept {
  ShadowBit s = shadow_bit(p);
  *s.word |= s.mask;
}

REHEAP_SLOW_PATH void check_class_free(HeapState* h, void* p, unsigned cls) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const std::size_t size = kClassSize[cls];
  const std::size_t offset = a & (kLaneSize - 1);
  const ClassCursor& k = h->cursor[cls];
  const ChunkHeader* chunk = class_header(ZoneImpl::chunk_base(a));
  const unsigned lane = lane_number(a);
  // Carved means before the cursor in (chunk ordinal, lane number, address) order.
  bool carved = k.chunk != nullptr &&
                (chunk->ordinal < k.chunk->ordinal ||
                 (chunk->ordinal == k.chunk->ordinal &&
                  (lane < k.lane || (lane == k.lane && p < k.cur))));
  if (offset % size != 0 || offset + size > kLaneSize || lane >= kLanesPerClassChunk || !carved) {
    report_misuse(Misuse::kNeverHandedOut, p, h->id, h->id);
  }
  ShadowBit s = shadow_bit(p);
  if (*s.word & s.mask) report_misuse(Misuse::kDoubleFree, p, h->id, h->id);
  *s.word |= s.mask;
}

}  // namespace reheap::detail
