// Purged lanes: a burst of small objects, once freed, gives its pages back to the OS.
//
// A class lane holds blocks of one size at fixed addresses, so a free block cannot move to
// another class and its page stays resident while it waits on the free list. When every block
// of a lane is free, the lane's pages can go: the purge walks a class's free list once, counting
// free blocks per lane, takes the blocks of every whole free lane off the list, discards the
// lane's pages and marks it in the purge map (heap_state.h). Nothing moves and no live block is
// touched. When the class's free list runs dry, carving revives the lowest purged lane before it
// takes new address space: its blocks go back on the free list (the pages fault in again as
// they are written).
//
// Only lanes behind the cursor's are purged: they are carved whole, so the lane's blocks are
// exactly the ones the count expects. The purge costs a walk of the class's free list and one
// madvise per lane; the runtime does it for an idle worker's reactors, never for a recorded one
// (freed memory then reads as zero, which a recording's digests would see).
#include <bit>
#include <cstdlib>

#include "heap_fast.h"
#include "os/memory.h"
#include "report.h"

namespace reheap::detail {
namespace {

// A class block's lane, numbered in its class's carving order: chunk ordinal, then lane number;
// past every lane for an address in a class group's unused last slot (a release build's bogus
// free can put one on a list), so that it counts toward no lane.
std::uint64_t heap_lane_number(std::uintptr_t a) noexcept {
  const unsigned lane = lane_number(a);
  if (lane >= kLanesPerClassChunk) return ~std::uint64_t{0};
  const ChunkHeader* chunk = class_header(ZoneImpl::chunk_base(a));
  return std::uint64_t{chunk->ordinal} * kLanesPerClassChunk + lane;
}

// Makes sure the purge map's entry for `ordinal` lies in pages the heap counts as committed.
void commit_map_entry(HeapState* h, std::uint32_t ordinal) noexcept {
  const std::size_t end = kPurgeMapOffset + (std::size_t{ordinal} + 1) * sizeof(LanePurgeMap);
  const auto pages = static_cast<std::uint32_t>(align_up(end, kPageSize) / kPageSize - 1);
  if (pages > h->purge_map_pages) {
    h->committed += std::size_t{pages - h->purge_map_pages} * kPageSize;
    h->purge_map_pages = pages;
  }
}

// Purges the whole free lanes of class `cls`; returns the bytes given back and adds the madvise
// calls to `*calls`. `chunks` holds the heap's class chunks by ordinal.
std::size_t purge_class(HeapState* h, unsigned cls, ChunkHeader* const* chunks, std::uint64_t* calls) noexcept {
  const ClassCursor& k = h->cursor[cls];
  if (k.chunk == nullptr) return 0;
  const std::size_t per_lane = kLaneSize / kClassSize[cls];
  // Lanes behind the cursor's, and only those the map can mark.
  std::uint64_t lanes = std::uint64_t{k.chunk->ordinal} * kLanesPerClassChunk + k.lane;
  if (lanes > std::uint64_t{kPurgeMapChunks} * kLanesPerClassChunk) lanes = std::uint64_t{kPurgeMapChunks} * kLanesPerClassChunk;
  if (lanes == 0 || h->free[cls] == nullptr) return 0;
  // Counted outside the heap: calloc is the system allocator's, whatever heap is current.
  auto* free_in = static_cast<std::uint32_t*>(std::calloc(lanes, sizeof(std::uint32_t)));
  if (free_in == nullptr) return 0;  // no memory to plan with: purge nothing this time
  // The walk stops past `carved` blocks: a longer list has a cycle (a release build's double free
  // that was not at the list's head: a block's one link cannot be in two places, so a block twice
  // on the list always makes a cycle), and nothing of such a class is purged, which keeps such a
  // block's lane, live neighbours included, from being counted whole.
  std::uint64_t walked = 0;
  std::size_t whole = 0;
  for (void* p = h->free[cls]; p != nullptr; p = *static_cast<void**>(p)) {
    if (++walked > k.carved) {
      std::free(free_in);
      return 0;
    }
    const std::uint64_t lane = heap_lane_number(reinterpret_cast<std::uintptr_t>(p));
    if (lane < lanes && ++free_in[lane] == per_lane) ++whole;
  }
  if (whole == 0) {
    std::free(free_in);
    return 0;
  }
  // Unlink the blocks of whole free lanes, keeping the others in their order.
  void** link = &h->free[cls];
  while (*link != nullptr) {
    void* p = *link;
    const std::uint64_t lane = heap_lane_number(reinterpret_cast<std::uintptr_t>(p));
    if (lane < lanes && free_in[lane] == per_lane) {
      *link = *static_cast<void**>(p);
    } else {
      link = static_cast<void**>(p);
    }
  }
  const std::size_t bytes = whole_lane_bytes(cls);
  LanePurgeMap* map = purge_map(h);
  for (std::uint64_t lane = 0; lane < lanes; ++lane) {
    if (free_in[lane] != per_lane) continue;
    const auto ordinal = static_cast<std::uint32_t>(lane / kLanesPerClassChunk);
    const auto number = static_cast<std::uint32_t>(lane % kLanesPerClassChunk);
    const std::uintptr_t start = chunk_of(chunks[ordinal], true) + lane_offset(cls, number);
    if (os::discard(start, bytes) != 0) {
      fatal("madvise(MADV_DONTNEED) of heap %llu's free lane at %#lx failed",
            static_cast<unsigned long long>(h->id), static_cast<unsigned long>(start));
    }
    // Off the free list, the blocks are no longer poisoned (readers of the heap's pages, a digest
    // or a snapshot, unpoison only the free lists' blocks); revival poisons them again.
    REHEAP_UNPOISON(reinterpret_cast<void*>(start), bytes);
    ++*calls;
    commit_map_entry(h, ordinal);
    map[ordinal].lanes[cls] |= std::uint32_t{1} << number;
  }
  std::free(free_in);
  h->purged_lanes[cls] += static_cast<std::uint32_t>(whole);
  h->committed -= whole * bytes;
  return whole * bytes;
}

}  // namespace

std::size_t purge_free_lanes(HeapState* h) noexcept {
  if (h->id == kNoHeapId || h->class_head == nullptr) return 0;
  const std::uint32_t mapped = h->class_chunks < kPurgeMapChunks ? h->class_chunks : kPurgeMapChunks;
  auto* chunks = static_cast<ChunkHeader**>(std::malloc(mapped * sizeof(ChunkHeader*)));
  if (chunks == nullptr) return 0;
  std::uint32_t n = 0;
  for (ChunkHeader* c = h->class_head; c != nullptr && n < mapped; c = c->next) chunks[n++] = c;
  std::size_t bytes = 0;
  std::uint64_t calls = 0;
  for (unsigned cls = 0; cls < kNumClasses; ++cls) bytes += purge_class(h, cls, chunks, &calls);
  std::free(chunks);
  count_purge_calls(h, calls);
  return bytes;
}

void* revive_purged_lane(HeapState* h, unsigned cls) noexcept {
  const std::size_t bytes = whole_lane_bytes(cls);
  LanePurgeMap* map = purge_map(h);
  ChunkHeader* c = h->class_head;
  while (c != nullptr && c->ordinal < kPurgeMapChunks && map[c->ordinal].lanes[cls] == 0) c = c->next;
  if (c == nullptr || c->ordinal >= kPurgeMapChunks) return nullptr;  // the count was stale: none
  // An attempt: near its limit the heap carves a page of new lane instead (carving charges a page
  // at a time, with the reclaim and the failure count of a real refusal), rather than count a
  // refusal for an allocation that may still succeed.
  if (!charge(h, bytes, Charge::kAttempt)) return nullptr;
  const auto number = static_cast<std::uint32_t>(std::countr_zero(map[c->ordinal].lanes[cls]));
  map[c->ordinal].lanes[cls] &= ~(std::uint32_t{1} << number);
  --h->purged_lanes[cls];
  // The lane's blocks in address order, the first handed out: the list is empty (carving runs
  // only then), so the rest becomes the whole list.
  const std::size_t size = kClassSize[cls];
  const std::size_t per_lane = kLaneSize / size;
  char* const lane = reinterpret_cast<char*>(chunk_of(c, true) + lane_offset(cls, number));
  void* next = h->free[cls];
  for (std::size_t i = per_lane; i-- > 1;) {
    char* block = lane + i * size;
    *reinterpret_cast<void**>(block) = next;
    REHEAP_POISON(block + sizeof(void*), size - sizeof(void*));  // as heap_free leaves a block
    if constexpr (kChecks) mark_class_free(block);
    next = block;
  }
  h->free[cls] = next;
  if constexpr (kChecks) mark_class_allocated(lane);
  return lane;
}

void forget_purged_lanes(HeapState* h, unsigned cls) noexcept {
  if (h->purged_lanes[cls] == 0) return;
  LanePurgeMap* map = purge_map(h);
  for (ChunkHeader* c = h->class_head; c != nullptr && c->ordinal < kPurgeMapChunks; c = c->next) {
    map[c->ordinal].lanes[cls] = 0;
  }
  h->purged_lanes[cls] = 0;
}

}  // namespace reheap::detail

namespace reheap {

std::size_t Heap::purge_free_lanes() noexcept { return detail::purge_free_lanes(detail::state(this)); }

}  // namespace reheap
