#include "used_pages.h"

#include <algorithm>

#include "../zone_impl.h"

namespace reheap::detail::snapshot {

namespace {

std::uint32_t index_of(std::uintptr_t chunk) noexcept {
  return static_cast<std::uint32_t>((chunk - g_zone.base.load(std::memory_order_relaxed)) >> kChunkShift);
}

// Bytes of a checked build's shadow in use for the first `lanes` lanes of a group.
constexpr std::size_t shadow_bytes(std::uint32_t lanes) noexcept {
  return align_up(std::size_t{lanes} * kShadowPerLane, kPageSize);
}

void class_chunk_ranges(const HeapState* h, std::uintptr_t base, std::uint32_t ordinal,
                        std::vector<os::PageRange>& out) {
  const std::size_t first = out.size();
  auto add = [&](std::uintptr_t begin, std::uintptr_t end) {
    if (end > begin) out.push_back({begin, align_up(end, kPageSize)});
  };
  add(base + kHeaderLane * kLaneSize, base + kHeaderLane * kLaneSize + kPageSize);
  if (ordinal == 0) {  // the purge map's pages in use (lane_purge.cpp)
    const std::uintptr_t map = base + kHeaderLane * kLaneSize + kPurgeMapOffset;
    add(map, map + std::size_t{h->purge_map_pages} * kPageSize);
  }
  for (unsigned cls = 0; cls < kNumClasses; ++cls) {
    const ClassCursor& k = h->cursor[cls];
    if (k.chunk == nullptr || ordinal > k.chunk->ordinal) continue;
    const std::uint32_t full_lanes = ordinal < k.chunk->ordinal ? kLanesPerClassChunk : k.lane;
    for (std::uint32_t n = 0; n < full_lanes; ++n) {
      const std::uintptr_t lane = base + lane_offset(cls, n);
      add(lane, lane + kLaneSize);
    }
    const std::uint32_t lanes = ordinal == k.chunk->ordinal ? k.lane + 1 : kLanesPerClassChunk;
    if (ordinal == k.chunk->ordinal) {
      const std::uintptr_t lane = base + lane_offset(cls, k.lane);
      add(lane, reinterpret_cast<std::uintptr_t>(k.limit));
    }
    if (kChecks && lanes > 1) {  // the bits of the class's lanes past the first, in its own group
      const std::uintptr_t shadow = base + shadow_offset(lane_offset(cls, 1));
      add(shadow, shadow + shadow_bytes(lanes - 1));
    }
  }
  if constexpr (kChecks) {  // group 0's: every class's first lane
    const std::uintptr_t shadow = base + shadow_offset(0);
    add(shadow, shadow + shadow_bytes(kNumClasses));
  }
  std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
            [](const os::PageRange& a, const os::PageRange& b) { return a.begin < b.begin; });
  // Merge touching ranges.
  std::size_t w = first;
  for (std::size_t r = first; r < out.size(); ++r) {
    if (w > first && out[w - 1].end >= out[r].begin) {
      out[w - 1].end = std::max(out[w - 1].end, out[r].end);
    } else {
      out[w++] = out[r];
    }
  }
  out.resize(w);
}

}  // namespace

std::vector<ChunkRun> chunk_runs(const HeapState* h) {
  std::vector<ChunkRun> runs;
  runs.reserve(h->class_chunks + h->large_chunks);
  for (const ChunkHeader* c = h->class_head; c != nullptr; c = c->next) {
    const std::uintptr_t base = chunk_of(c, true);
    runs.push_back({base, index_of(base), 1, ChunkUse::kClass});
  }
  for (const ChunkHeader* c = h->large_head; c != nullptr; c = c->next) {
    const auto base = reinterpret_cast<std::uintptr_t>(c);
    runs.push_back({base, index_of(base), c->run_chunks,
                    c->kind == ChunkKind::kHuge ? ChunkUse::kHuge : ChunkUse::kLarge});
  }
  std::sort(runs.begin(), runs.end(), [](const ChunkRun& a, const ChunkRun& b) { return a.base < b.base; });
  return runs;
}

void used_ranges(const HeapState* h, const ChunkRun& run, std::vector<os::PageRange>& out) {
  switch (run.use) {
    case ChunkUse::kClass:
      class_chunk_ranges(h, run.base, class_header(run.base)->ordinal, out);
      return;
    case ChunkUse::kLarge: {
      const ChunkHeader* c = large_header(run.base);
      const std::uint32_t pages = std::max<std::uint32_t>(c->frontier, kFirstRunPage);
      out.push_back({run.base, run.base + std::uintptr_t{pages} * kPageSize});
      return;
    }
    case ChunkUse::kHuge: {
      const ChunkHeader* c = large_header(run.base);
      if (c->retained_seq != 0) {  // a freed block kept for reuse: only its header is state
        out.push_back({run.base, run.base + kPageSize});
        return;
      }
      const auto end = reinterpret_cast<std::uintptr_t>(c->huge_block) + c->huge_size;
      out.push_back({run.base, align_up(end, kPageSize)});
      return;
    }
  }
}

}  // namespace reheap::detail::snapshot
