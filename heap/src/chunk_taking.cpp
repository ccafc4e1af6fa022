// Taking new zone chunks for a live heap: the one door through which a class outgrowing its chunk
// (class_lanes.cpp) and page runs and huge blocks (page_runs.cpp) get chunks, and the place where
// a ChunkPlacement (reheap/chunk_placement.h) watches or steers them.
//
// What the process did for the heap while taking chunks - the mprotect calls, and the placement
// attached - lives in the zone's ChunkTaking record (zone_impl.h), not in the heap's pages: the
// calls depend on how far this process's zone had made its halves accessible, so a replay in
// another process would make other calls, and the heap's pages are what a snapshot saves and a
// digest compares.
//
// Cost: a heap takes a chunk at most once per 64 MiB of class blocks or page runs, or once per
// huge block. With no placement attached, the take is the zone's first fit plus one load and a
// compare of the record; the steered path is out of line.
#include "heap_state.h"
#include "reheap/chunk_placement.h"

namespace reheap::detail {
namespace {

ZoneImpl::ChunkTaking& own_taking(const HeapState* h) noexcept {
  ZoneImpl::ChunkTaking& t = zone().taking(h->id);
  if (t.heap != h->id) t = ZoneImpl::ChunkTaking{h->id, 0, nullptr};
  return t;
}

std::uint64_t index_of(std::uintptr_t chunk) noexcept {
  return (chunk - g_zone.base.load(std::memory_order_relaxed)) >> kChunkShift;
}

// A live heap holding one of the chunks [first, first + count), or 0 (they lie in the zone). Read
// without the zone's lock: the answer only explains a refusal that has already happened.
HeapId holder_of(std::size_t first, std::size_t count) noexcept {
  for (std::size_t k = first; k < first + count; ++k) {
    const HeapId owner = ZoneImpl::owner_of(ZoneImpl::chunk_address(static_cast<std::uint32_t>(k)));
    if (owner != 0 && (owner & kTombstone) == 0) return owner;
  }
  return 0;
}

[[gnu::noinline, gnu::cold]] std::uintptr_t take_placed(HeapState* h, ZoneImpl::ChunkTaking& t, Half half,
                                                       std::size_t count) noexcept {
  ZoneImpl& z = zone();
  ChunkPlacement* placement = t.placement;
  const ChunkHalf public_half = half == Half::kClass ? ChunkHalf::kClass : ChunkHalf::kLarge;
  const std::optional<std::uint64_t> named = placement->place(public_half, count);
  if (!named) {
    const std::uintptr_t chunk = z.acquire(half, count, h->id, &t.mprotect_calls);
    if (chunk != 0) placement->taken(ChunkRun{public_half, index_of(chunk), count});
    return chunk;
  }
  const ChunkRun run{public_half, *named, count};
  // The half is checked here, not left to acquire_at, which takes a run wherever it lies: a class
  // chunk asked for must not come from the large half, nor the reverse.
  if (!z.in_half(half, *named, count)) {
    placement->refused(run, ChunkRefusal{.outside_half = true, .holder = 0});
    return 0;
  }
  if (!z.acquire_at(*named, count, h->id, &t.mprotect_calls)) {
    placement->refused(run, ChunkRefusal{.outside_half = false, .holder = holder_of(*named, count)});
    return 0;
  }
  placement->taken(run);
  return ZoneImpl::chunk_address(static_cast<std::uint32_t>(*named));
}

}  // namespace

std::uintptr_t take_chunks(HeapState* h, Half half, std::size_t count) noexcept {
  ZoneImpl::ChunkTaking& t = own_taking(h);
  if (t.placement != nullptr) [[unlikely]] return take_placed(h, t, half, count);
  return zone().acquire(half, count, h->id, &t.mprotect_calls);
}

void note_created(const HeapState* h, std::uint64_t mprotect_calls) noexcept {
  // A recycled heap made no call, and the record there (an earlier heap's, told apart by its id)
  // is left alone: writing it would bring a cold line of the zone's table into every spawn.
  if (mprotect_calls != 0) zone().taking(h->id) = ZoneImpl::ChunkTaking{h->id, mprotect_calls, nullptr};
}

std::uint64_t mprotect_calls(const HeapState* h) noexcept {
  const ZoneImpl::ChunkTaking& t = zone().taking(h->id);
  return t.heap == h->id ? t.mprotect_calls : 0;
}

}  // namespace reheap::detail

namespace reheap {

void set_chunk_placement(Heap& heap, ChunkPlacement* placement) noexcept {
  detail::own_taking(detail::state(&heap)).placement = placement;
}

ChunkPlacement* chunk_placement(const Heap& heap) noexcept {
  const detail::HeapState* h = detail::state(&heap);
  const detail::ZoneImpl::ChunkTaking& t = detail::zone().taking(h->id);
  return t.heap == h->id ? t.placement : nullptr;
}

void detach_chunk_placement(std::uint64_t heap_id, const ChunkPlacement* placement) noexcept {
  detail::ZoneImpl& z = detail::zone();
  if (!z.in_half(detail::Half::kClass, detail::first_chunk_of(heap_id), 1)) return;
  detail::ZoneImpl::ChunkTaking& t = z.taking(heap_id);
  if (t.heap == heap_id && t.placement == placement) t.placement = nullptr;
}

}  // namespace reheap
