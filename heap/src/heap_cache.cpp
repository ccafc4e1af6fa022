// The heap cache (heap_cache.h): caching a dying heap, reusing it, and giving cached heaps back
// to the OS when the cache is over its bounds or purged.
#include "heap_cache.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <iterator>
#include <new>

#include "current.h"
#include "heap_fast.h"
#include "os/memory.h"
#include "report.h"

namespace reheap {
namespace detail {
namespace {

// The checked build's free bitmap of a group's lanes (layout.h, shadow_offset).
constexpr std::size_t kShadowBytes = kLanesPerGroup * kShadowPerLane;

struct Settings {
  std::atomic<std::size_t> heaps;
  std::atomic<std::size_t> bytes;
  std::atomic<std::size_t> delay;
  std::atomic<std::size_t> max_heap_bytes;
};
// Checked builds start without recycling: every destroyed heap goes to the quarantine.
constinit Settings g_settings{kChecks ? 0 : HeapCacheConfig{}.heaps, HeapCacheConfig{}.bytes,
                              HeapCacheConfig{}.delay, HeapCacheConfig{}.max_heap_bytes};

// What a cached chunk keeps of its old heap, written where that heap's state was.
struct CachedHeap {
  HeapId old_id;
  std::uint32_t groups;  // bit g: group g was carved in (checked builds clear its shadow lane)
  std::uint32_t dirty_end[kNumClasses];
};
static_assert(sizeof(CachedHeap) <= sizeof(HeapState));

// Discards a chunk no longer cached and gives it to the zone's quarantine.
void release_chunk(std::uintptr_t chunk) noexcept {
  const HeapId old_id = reinterpret_cast<const CachedHeap*>(heap_at(chunk))->old_id;
  if (os::discard(chunk, kChunkSize) != 0) {
    fatal("madvise(MADV_DONTNEED) of the cached chunk at %#lx failed", static_cast<unsigned long>(chunk));
  }
  zone().release(chunk, 1, old_id);
}

// Gives back the oldest cached heaps while more than `keep_heaps` or `keep_bytes` wait; returns
// the bytes given back. The zone lock is held only to pick them, a batch at a time.
std::size_t release_oldest(std::size_t keep_heaps, std::size_t keep_bytes) noexcept {
  constexpr std::size_t kBatch = 64;
  ZoneImpl::CachedChunk batch[kBatch];
  std::size_t bytes = 0;
  while (true) {
    const std::size_t n = zone().pop_cached(keep_heaps, keep_bytes, batch, kBatch);
    for (std::size_t i = 0; i < n; ++i) {
      release_chunk(ZoneImpl::chunk_address(batch[i].chunk));
      bytes += std::size_t{batch[i].pages} << kPageShift;
    }
    if (n < kBatch) return bytes;
  }
}

// The committed bytes of class `cls`'s lanes in a first chunk, from its lane 0 up to `end` (an
// offset from the chunk: in one of the class's lanes, at its start (a cursor moved to a lane the
// limit then refused) or at the end of its blocks). The lanes are not contiguous (the first lies
// in group 0), so the lane is the last one starting at or below `end`.
constexpr std::size_t lane_bytes_below(unsigned cls, std::size_t end) noexcept {
  if (end == 0) return 0;
  unsigned lane = kLanesPerClassChunk - 1;
  while (lane > 0 && lane_offset(cls, lane) > end) --lane;
  return lane * whole_lane_bytes(cls) + align_up(end - lane_offset(cls, lane), kPageSize);
}
static_assert(lane_bytes_below(0, lane_offset(0, 1)) == whole_lane_bytes(0) &&
              lane_bytes_below(5, lane_offset(5, 1)) == whole_lane_bytes(5) &&
              lane_bytes_below(5, lane_offset(5, 0) + 100) == kPageSize &&
              lane_bytes_below(5, lane_offset(5, 3) + 5000) == 3 * whole_lane_bytes(5) + 2 * kPageSize &&
              lane_bytes_below(20, lane_offset(20, 31) + whole_lane_bytes(20)) == 32 * whole_lane_bytes(20),
              "a lane's start counts the lanes before it, an end inside a lane its pages up to there");

// The groups holding class `cls`'s lanes 0..last, as a mask.
std::uint32_t groups_of_lanes(unsigned cls, std::uint32_t last) noexcept {
  return last == 0 ? 1u : 1u | (1u << group_index(lane_offset(cls, 1)));
}

// Committed pages of the first class chunk of `h`, and what the record says of it.
//
// Carving keeps every byte of the committed window past the cursor zero (fresh pages are zero,
// recycled ones are cleared up to the old reach), so only what lies below the cursor is this
// life's: the next life clears that much, not the whole window. What an earlier life left beyond
// this one's reach (recycled_dirty_end) is still there and stays in the record.
std::size_t first_chunk_bytes(const HeapState* h, CachedHeap* record) noexcept {
  const ChunkHeader* first = h->class_head;
  const std::uintptr_t base = chunk_of(first, true);
  std::size_t bytes = kPageSize;  // the header page
  record->groups = 1;
  for (unsigned cls = 0; cls < kNumClasses; ++cls) {
    const ClassCursor& k = h->cursor[cls];
    const std::size_t older = h->recycled_dirty_end[cls];
    if (k.chunk == nullptr && older == 0) continue;  // most classes: never carved, nothing left
    std::size_t dirty = older;
    std::size_t committed = older != 0 ? lane_bytes_below(cls, older) : 0;
    const std::size_t whole_lane = whole_lane_bytes(cls);
    if (k.chunk == first) {
      const std::uintptr_t lane = base + lane_offset(cls, k.lane);
      const auto limit = reinterpret_cast<std::uintptr_t>(k.limit);
      dirty = std::max(dirty, static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(k.cur) - base));
      committed = std::max(committed, k.lane * whole_lane + (limit - lane));
      record->groups |= groups_of_lanes(cls, k.lane);
    } else if (k.chunk != nullptr) {
      dirty = lane_offset(cls, kLanesPerClassChunk - 1) + whole_lane;
      committed = kLanesPerClassChunk * whole_lane;
      record->groups |= groups_of_lanes(cls, kLanesPerClassChunk - 1);
    }
    record->dirty_end[cls] = static_cast<std::uint32_t>(dirty);
    bytes += committed;
  }
  return bytes;
}

// Zeroes the dying heap's state, on the thread that used it (its lines are in that core's cache),
// so that a reuse writes only a new heap's non-zero fields. What is zero already is left alone:
// of the bins only the non-empty ones (bin_mask) and of the cursors only the classes that carved
// (a cursor without a chunk is all zero), most of both being lines nobody touched.
void scrub_state(HeapState* h) noexcept {
  for (unsigned w = 0; w < std::size(h->bin_mask); ++w) {
    for (std::uint64_t m = h->bin_mask[w]; m != 0; m &= m - 1) h->bins[w * 64 + static_cast<unsigned>(std::countr_zero(m))] = nullptr;
  }
  for (ClassCursor& k : h->cursor) {
    if (k.chunk != nullptr) k = ClassCursor{};
  }
  char* const begin = reinterpret_cast<char*>(h);
  char* const cursors = reinterpret_cast<char*>(h->cursor);
  char* const after_cursors = cursors + sizeof h->cursor;
  char* const bins = reinterpret_cast<char*>(h->bins);
  char* const after_bins = bins + sizeof h->bins;
  std::memset(begin, 0, static_cast<std::size_t>(cursors - begin));
  std::memset(after_cursors, 0, static_cast<std::size_t>(bins - after_cursors));
  std::memset(after_bins, 0, static_cast<std::size_t>(begin + sizeof(HeapState) - after_bins));
}

// Asks for the lines a reuse of the cached chunk at `chunk` writes, for the next spawn. The
// thread that destroyed that heap wrote them last: when heaps are created on one thread and
// destroyed on another (spawning from outside a runtime), each is a transfer from the other
// core's cache, which a prefetch now overlaps with the rest of this spawn. A hint only: it
// neither faults nor changes anything if the chunk is taken by another thread meanwhile.
void prefetch_for_reuse(std::uintptr_t chunk) noexcept {
  const HeapState* const h = heap_at(chunk);
  const char* const state = reinterpret_cast<const char*>(h);
  __builtin_prefetch(class_header(chunk), 1);
  for (std::size_t line = 0; line < sizeof(CachedHeap); line += 64) __builtin_prefetch(state + line, 1);
  __builtin_prefetch(&h->limit, 1);
  __builtin_prefetch(&h->class_head, 1);
  __builtin_prefetch(&h->recycled_dirty_end[0], 1);
  __builtin_prefetch(&h->recycled_dirty_end[kNumClasses - 1], 1);
  __builtin_prefetch(&h->retain_limit, 1);
}

}  // namespace

bool cache_heap(HeapState* h) noexcept {
  if (g_settings.heaps.load(std::memory_order_relaxed) == 0) return false;
  CachedHeap record{};
  const std::size_t bytes = first_chunk_bytes(h, &record);
  if (bytes > g_settings.max_heap_bytes.load(std::memory_order_relaxed)) return false;
  const HeapId id = h->id;
  record.old_id = id;
  ChunkHeader* first = discard_all_but_state(
      h, nullptr, [](void*, std::uintptr_t chunk, std::size_t count, HeapId owner) {
        zone().release(chunk, count, owner);
      });
  ZoneImpl& z = zone();
  const std::uintptr_t chunk = chunk_of(first, true);
  if (h->purge_map_pages != 0) {  // the next heap here starts with no lane purged
    os::discard(chunk + kHeaderLane * kLaneSize + kPurgeMapOffset, std::size_t{h->purge_map_pages} * kPageSize);
  }
  scrub_state(h);
  std::memcpy(static_cast<void*>(h), &record, sizeof record);  // h is gone from here on
  z.heap_destroyed();
  // Past a bound, down to seven eighths of it at once: a cache that just overflowed would
  // otherwise give back one heap per destroy from then on.
  const std::size_t heaps = std::min(g_settings.heaps.load(std::memory_order_relaxed), ZoneImpl::kMaxCachedHeaps);
  const std::size_t max_bytes = g_settings.bytes.load(std::memory_order_relaxed);
  switch (z.cache(chunk, id, bytes, heaps, max_bytes)) {
    case ZoneImpl::Cached::kYes:
      break;
    case ZoneImpl::Cached::kOverBound:
      release_oldest(heaps - heaps / 8, max_bytes - max_bytes / 8);
      break;
    case ZoneImpl::Cached::kNoRoom:
      release_chunk(chunk);
      break;
  }
  return true;
}

HeapState* reuse_cached_heap() noexcept {
  if (zone().retained_bytes() == 0) return nullptr;  // the common case without recycling: no lock
  HeapId id = 0;
  std::uintptr_t next = 0;
  const std::uintptr_t chunk = zone().reuse(g_settings.delay.load(std::memory_order_relaxed), &id, &next);
  if (chunk == 0) return nullptr;
  if (next != 0) prefetch_for_reuse(next);
  void* const state = heap_at(chunk);
  CachedHeap record;
  std::memcpy(&record, state, sizeof record);
  // The header page reads as a fresh chunk's: scrub_state left the state zero but for the record,
  // and nothing writes the page past the state. Only a new heap's non-zero fields are written, so
  // this touches a few cache lines of a page the destroying worker wrote last.
  std::memset(class_header(chunk), 0, kStateOffset);
  std::memset(state, 0, sizeof record);
  if constexpr (kChecks) {
    // The free bitmaps are read whole by a snapshot: none of the old heap's bits may remain.
    for (std::uint32_t groups = record.groups; groups != 0; groups &= groups - 1) {
      const auto g = static_cast<unsigned>(std::countr_zero(groups));
      std::memset(reinterpret_cast<void*>(chunk + shadow_offset(g * kGroupSize)), 0, kShadowBytes);
    }
  }
  auto* h = std::launder(static_cast<HeapState*>(state));
  h->id = id;
  h->limit = kUnlimited;
  std::memcpy(h->recycled_dirty_end, record.dirty_end, sizeof record.dirty_end);
  return h;
}

}  // namespace detail

HeapCacheConfig Zone::heap_cache() noexcept {
  const detail::Settings& s = detail::g_settings;
  return HeapCacheConfig{s.heaps.load(std::memory_order_relaxed), s.bytes.load(std::memory_order_relaxed),
                         s.delay.load(std::memory_order_relaxed),
                         s.max_heap_bytes.load(std::memory_order_relaxed)};
}

HeapCacheConfig Zone::set_heap_cache(const HeapCacheConfig& config) noexcept {
  const HeapCacheConfig before = heap_cache();
  detail::Settings& s = detail::g_settings;
  s.heaps.store(std::min(config.heaps, detail::ZoneImpl::kMaxCachedHeaps), std::memory_order_relaxed);
  s.bytes.store(config.bytes, std::memory_order_relaxed);
  s.delay.store(config.delay, std::memory_order_relaxed);
  s.max_heap_bytes.store(config.max_heap_bytes, std::memory_order_relaxed);
  return before;
}

std::size_t Zone::purge_heap_cache() noexcept { return detail::release_oldest(0, 0); }

std::size_t Zone::heap_cache_bytes() noexcept {
  return detail::zone().reserved() ? detail::zone().retained_bytes() : 0;
}

}  // namespace reheap
