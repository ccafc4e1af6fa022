// The thread's heap cache (heap_cache.h): caching a dying heap, reusing it, and giving cached
// heaps back to the OS when the cache is over its bounds, purged, or its thread ends.
#include "heap_cache.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>

#include "current.h"
#include "heap_fast.h"
#include "os.h"
#include "report.h"

namespace reheap {
namespace detail {
namespace {

constexpr std::size_t kMaxCachedHeaps = 4096;
// The checked build's free bitmap of a group: one bit per 8 bytes of each class lane.
constexpr std::size_t kShadowBytes = align_up(kNumClasses * (kLaneSize / 64), kPageSize);

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
  std::uint32_t groups;  // groups of the chunk carved in (checked builds clear their shadow lanes)
  std::uint32_t dirty_end[kNumClasses];
};
static_assert(sizeof(CachedHeap) <= sizeof(HeapState));

struct Entry {
  std::uint32_t chunk;  // zone index
  std::uint32_t pages;  // committed when cached
};

// Trivially destructible, so usable at any point of the thread's (and the process's) exit.
struct ThreadCache {
  Entry* ring;
  std::size_t head;
  std::size_t length;
  std::size_t bytes;
  bool closed;
};
constinit thread_local ThreadCache t_cache{};

std::size_t chunk_index(std::uintptr_t chunk) noexcept {
  return (chunk - g_zone.base.load(std::memory_order_relaxed)) >> kChunkShift;
}

Entry pop_oldest() noexcept {
  ThreadCache& t = t_cache;
  const Entry e = t.ring[t.head];
  t.head = (t.head + 1) % kMaxCachedHeaps;
  --t.length;
  t.bytes -= std::size_t{e.pages} << kPageShift;
  return e;
}

// Gives the oldest cached heap back: its pages to the OS, its chunk to the zone's quarantine.
std::size_t release_oldest() noexcept {
  const Entry e = pop_oldest();
  const std::uintptr_t chunk = ZoneImpl::chunk_address(e.chunk);
  if (!zone().uncache(chunk)) return 0;  // a restore took it
  const HeapId old_id = reinterpret_cast<const CachedHeap*>(heap_at(chunk))->old_id;
  if (os::discard(chunk, kChunkSize) != 0) {
    fatal("madvise(MADV_DONTNEED) of the cached chunk at %#lx failed", static_cast<unsigned long>(chunk));
  }
  zone().release(chunk, 1, old_id);
  return std::size_t{e.pages} << kPageShift;
}

// Past a bound, down to seven eighths of it at once: a cache that just overflowed would
// otherwise release one heap per destroy from then on.
void trim() noexcept {
  const std::size_t heaps = std::min(g_settings.heaps.load(std::memory_order_relaxed), kMaxCachedHeaps);
  const std::size_t bytes = g_settings.bytes.load(std::memory_order_relaxed);
  if (t_cache.length <= heaps && t_cache.bytes <= bytes) return;
  while (t_cache.length != 0 && (t_cache.length > heaps - heaps / 8 || t_cache.bytes > bytes - bytes / 8)) {
    release_oldest();
  }
}

std::size_t purge() noexcept {
  std::size_t bytes = 0;
  while (t_cache.length != 0) bytes += release_oldest();
  return bytes;
}

struct Closer {
  Closer() = default;
  Closer(const Closer&) = delete;
  Closer& operator=(const Closer&) = delete;
  ~Closer() {
    purge();
    if (t_cache.ring != nullptr) os::unmap_table(t_cache.ring, kMaxCachedHeaps * sizeof(Entry));
    t_cache.ring = nullptr;
    t_cache.closed = true;
  }
};

// The ring, mapped (and the thread's exit hooked) on the thread's first caching; false if the
// thread has ended or the mapping failed.
bool open_ring() noexcept {
  if (t_cache.ring != nullptr) return true;
  if (t_cache.closed) return false;
  static thread_local Closer closer;  // its destructor runs at the thread's exit
  t_cache.ring = static_cast<Entry*>(os::map_table(kMaxCachedHeaps * sizeof(Entry)));
  return t_cache.ring != nullptr;
}

// Committed pages of the first class chunk of `h`, and what the record says of it.
std::size_t first_chunk_bytes(const HeapState* h, CachedHeap* record) noexcept {
  const ChunkHeader* first = h->class_head;
  const std::uintptr_t base = chunk_of(first, true);
  std::size_t bytes = kPageSize;  // the header page
  record->groups = 1;
  for (unsigned cls = 0; cls < kNumClasses; ++cls) {
    const ClassCursor& k = h->cursor[cls];
    if (k.chunk == nullptr) continue;
    const std::size_t whole_lane = align_up(kLaneSize / kClassSize[cls] * kClassSize[cls], kPageSize);
    if (k.chunk == first) {
      const std::uintptr_t lane = base + k.group * kGroupSize + cls * kLaneSize;
      const auto limit = reinterpret_cast<std::uintptr_t>(k.limit);
      bytes += k.group * whole_lane + (limit - lane);
      record->dirty_end[cls] = static_cast<std::uint32_t>(limit - base);
      record->groups = std::max(record->groups, k.group + 1);
    } else {
      bytes += kGroupsPerChunk * whole_lane;
      record->dirty_end[cls] =
          static_cast<std::uint32_t>((kGroupsPerChunk - 1) * kGroupSize + cls * kLaneSize + whole_lane);
      record->groups = kGroupsPerChunk;
    }
  }
  return bytes;
}

}  // namespace

bool cache_heap(HeapState* h) noexcept {
  if (g_settings.heaps.load(std::memory_order_relaxed) == 0) return false;
  CachedHeap record{};
  const std::size_t bytes = first_chunk_bytes(h, &record);
  if (bytes > g_settings.max_heap_bytes.load(std::memory_order_relaxed) || !open_ring()) return false;
  const HeapId id = h->id;
  record.old_id = id;
  if (t_current == h) t_current = &g_no_heap;
  ZoneImpl& z = zone();
  if (ChunkObserver* o = z.observer(id)) {
    z.set_observer(id, nullptr);
    o->heap_destroyed();
  }
  unpoison_free_blocks(h);
  for (ChunkHeader* c = h->large_head; c != nullptr;) {
    ChunkHeader* next = c->next;
    const std::size_t chunks = owned_run_chunks(h, c);
    release_chunk_pages(h, c, false);
    z.release(reinterpret_cast<std::uintptr_t>(c), chunks, id);
    c = next;
  }
  ChunkHeader* first = h->class_head;
  for (ChunkHeader* c = first->next; c != nullptr;) {
    ChunkHeader* next = c->next;
    release_chunk_pages(h, c, true);
    z.release(chunk_of(c, true), 1, id);
    c = next;
  }
  const std::uintptr_t chunk = chunk_of(first, true);
  new (heap_at(chunk)) CachedHeap(record);  // h is gone from here on
  z.cache(chunk, id, bytes);
  z.heap_destroyed();
  ThreadCache& t = t_cache;
  t.ring[(t.head + t.length) % kMaxCachedHeaps] = {static_cast<std::uint32_t>(chunk_index(chunk)),
                                                   static_cast<std::uint32_t>(bytes >> kPageShift)};
  ++t.length;
  t.bytes += bytes;
  trim();
  return true;
}

std::uintptr_t reuse_cached_heap(HeapId* id, std::uint32_t* dirty_end) noexcept {
  const std::size_t delay = g_settings.delay.load(std::memory_order_relaxed);
  while (t_cache.length > delay) {
    const std::uintptr_t chunk = ZoneImpl::chunk_address(pop_oldest().chunk);
    *id = zone().reuse(chunk);
    if (*id == 0) continue;  // a restore took it
    const CachedHeap record = *reinterpret_cast<const CachedHeap*>(heap_at(chunk));
    std::memcpy(dirty_end, record.dirty_end, sizeof record.dirty_end);
    // The header page reads as a fresh chunk's; the state itself is constructed whole by
    // Heap::create, so only the bytes around it are cleared here.
    char* const page = reinterpret_cast<char*>(class_header(chunk));
    std::memset(page, 0, kStateOffset);
    std::memset(page + kStateOffset + sizeof(HeapState), 0, kPageSize - kStateOffset - sizeof(HeapState));
    if constexpr (kChecks) {
      // The free bitmaps are read whole by a snapshot: none of the old heap's bits may remain.
      for (std::uint32_t g = 0; g < record.groups; ++g) {
        std::memset(reinterpret_cast<void*>(chunk + g * kGroupSize + kShadowLane * kLaneSize), 0, kShadowBytes);
      }
    }
    return chunk;
  }
  return 0;
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
  s.heaps.store(std::min(config.heaps, detail::kMaxCachedHeaps), std::memory_order_relaxed);
  s.bytes.store(config.bytes, std::memory_order_relaxed);
  s.delay.store(config.delay, std::memory_order_relaxed);
  s.max_heap_bytes.store(config.max_heap_bytes, std::memory_order_relaxed);
  return before;
}

std::size_t Zone::purge_thread_cache() noexcept { return detail::purge(); }

}  // namespace reheap
