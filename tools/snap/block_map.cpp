// Attributing heap addresses to blocks from a snapshot's pages (see block_map.h).
#include "block_map.h"

#include <algorithm>
#include <cstring>

#include "heap_state.h"  // heap/src: the allocator's layout of its chunks and metadata
#include "layout.h"
#include "zone_impl.h"

namespace reheap::snap {
namespace {

namespace d = reheap::detail;

BlockInfo unattributed(std::string why) {
  BlockInfo info;
  info.what = std::move(why);
  return info;
}

BlockInfo metadata(std::uintptr_t address, std::uint64_t size, std::string what) {
  BlockInfo info;
  info.kind = BlockKind::kMetadata;
  info.address = address;
  info.size = size;
  info.what = std::move(what);
  return info;
}

}  // namespace

const char* block_kind_name(BlockKind kind) {
  switch (kind) {
    case BlockKind::kUnattributed: return "unattributed";
    case BlockKind::kClassBlock: return "class";
    case BlockKind::kPageRun: return "page-run";
    case BlockKind::kHugeBlock: return "huge";
    case BlockKind::kMetadata: return "metadata";
  }
  return "unknown";
}

BlockMap::BlockMap(const SnapshotHeader& header, const StoredPages& pages)
    : header_(header), pages_(pages) {
  // The layout constants are this build's; a snapshot of another geometry is not guessed at.
  if (header.page_size != kPageSize || header.chunk_size != d::kChunkSize) {
    geometry_error_ = "the snapshot's page or chunk size is not this build's";
  }
}

BlockInfo BlockMap::locate(std::uintptr_t address) {
  if (!geometry_error_.empty()) return unattributed(geometry_error_);
  if (address < header_.zone_base || address - header_.zone_base >= header_.zone_size) {
    return unattributed("outside the zone");
  }
  const auto index = static_cast<std::uint32_t>((address - header_.zone_base) >> d::kChunkShift);
  const auto it = std::lower_bound(
      header_.chunks.begin(), header_.chunks.end(), index,
      [](const SnapshotChunk& c, std::uint32_t i) { return c.index < i; });
  if (it == header_.chunks.end() || it->index != index) {
    return unattributed("in no chunk the header lists");
  }
  const std::uintptr_t chunk = header_.zone_base + (std::uintptr_t{index} << d::kChunkShift);
  switch (it->use) {
    case ChunkUse::kClass: return in_class_chunk(chunk, address);
    case ChunkUse::kLarge: return in_large_chunk(chunk, address);
    case ChunkUse::kHuge: return in_huge_run(address);
  }
  return unattributed("a chunk of unknown use");
}

BlockInfo BlockMap::in_class_chunk(std::uintptr_t chunk, std::uintptr_t address) const {
  const unsigned group = d::group_index(address - chunk);
  const unsigned slot = d::lane_slot(address);
  const unsigned cls = d::class_of_address(address);
  const std::uintptr_t lane_base = d::align_down(address, d::kLaneSize);
  const std::uintptr_t in_lane = address - lane_base;
  if (cls < kNumClasses) {
    const std::uint64_t size = kClassSize[cls];
    const std::uint64_t k = in_lane / size;
    if ((k + 1) * size > d::kLaneSize) {
      return unattributed("slack after the last block of a class " + std::to_string(cls) +
                          " lane");
    }
    BlockInfo info;
    info.kind = BlockKind::kClassBlock;
    info.address = lane_base + k * size;
    info.size = size;
    info.size_class = cls;
    return info;
  }
  if (slot == d::kHeaderLane && group == 0) {
    if (in_lane < sizeof(d::ChunkHeader)) {
      return metadata(lane_base, sizeof(d::ChunkHeader), "class chunk header");
    }
    const std::uintptr_t first =
        header_.zone_base + (std::uintptr_t{d::first_chunk_of(header_.heap_id)} << d::kChunkShift);
    if (chunk == first && in_lane >= d::kStateOffset &&
        in_lane < d::kStateOffset + sizeof(d::HeapState)) {
      return metadata(lane_base + d::kStateOffset, sizeof(d::HeapState), "heap state");
    }
    return unattributed("unused bytes of the header lane");
  }
  if (header_.checked_build && ((group == 0 && slot == d::kShadowLane) || group == d::kShadowGroup)) {
    return metadata(lane_base, d::kLaneSize, "free-block shadow");
  }
  return unattributed("a lane no allocator structure uses");
}

const BlockMap::LargeChunk& BlockMap::large_chunk(std::uintptr_t chunk) {
  auto [it, inserted] = large_.try_emplace(chunk);
  LargeChunk& large = it->second;
  if (!inserted) return large;
  d::ChunkHeader header;
  pages_.read(chunk, &header, sizeof header);
  if (header.kind != d::ChunkKind::kLarge || header.frontier < d::kFirstRunPage ||
      header.frontier > d::kPagesPerChunk) {
    large.why = "the large chunk's header is missing or not a large chunk header";
    return large;
  }
  large.valid = true;
  large.frontier = header.frontier;
  std::vector<std::uint16_t> table(d::kPagesPerChunk);
  pages_.read(chunk + kPageSize, table.data(), table.size() * sizeof table[0]);
  // The same tiling rule restore checks (state_check.cpp): heads with lengths, up to the frontier.
  std::uint32_t p = d::kFirstRunPage;
  while (p < large.frontier) {
    const std::uint16_t head = table[p];
    const std::uint32_t length = head & d::kRunLength;
    if ((head & d::kRunHead) == 0 || length == 0 || length > large.frontier - p) break;
    large.runs.push_back({p, length, (head & d::kRunFree) != 0});
    p += length;
  }
  large.tiled_to = p;
  return large;
}

BlockInfo BlockMap::in_large_chunk(std::uintptr_t chunk, std::uintptr_t address) {
  const auto page = static_cast<std::uint32_t>((address - chunk) >> d::kPageShift);
  if (page == 0) {
    if (address - chunk < sizeof(d::ChunkHeader)) {
      return metadata(chunk, sizeof(d::ChunkHeader), "large chunk header");
    }
    return unattributed("unused bytes of a large chunk's header page");
  }
  if (page < d::kFirstRunPage) {
    return metadata(chunk + kPageSize, d::kPageTablePages * kPageSize, "page table");
  }
  const LargeChunk& large = large_chunk(chunk);
  if (!large.valid) return unattributed(large.why);
  if (page >= large.frontier) return unattributed("past the large chunk's frontier");
  if (page >= large.tiled_to) return unattributed("the page table does not describe this page");
  const auto it = std::upper_bound(large.runs.begin(), large.runs.end(), page,
                                   [](std::uint32_t p, const PageRunEntry& r) { return p < r.first; });
  const PageRunEntry& run = *(it - 1);  // runs tile [kFirstRunPage, tiled_to): one holds `page`
  BlockInfo info;
  info.kind = BlockKind::kPageRun;
  info.address = chunk + std::uintptr_t{run.first} * kPageSize;
  info.size = std::uint64_t{run.pages} * kPageSize;
  info.free = run.free;
  return info;
}

BlockInfo BlockMap::in_huge_run(std::uintptr_t address) {
  if (!huge_runs_read_) {
    huge_runs_read_ = true;
    // Runs of huge chunks are listed whole and in order, each headed by its header: walk each
    // stretch of consecutive huge chunks from its first, run by run.
    const std::vector<SnapshotChunk>& chunks = header_.chunks;
    for (std::size_t i = 0; i < chunks.size();) {
      if (chunks[i].use != ChunkUse::kHuge) {
        ++i;
        continue;
      }
      std::size_t stretch = 1;
      while (i + stretch < chunks.size() && chunks[i + stretch].use == ChunkUse::kHuge &&
             chunks[i + stretch].index == chunks[i].index + stretch) {
        ++stretch;
      }
      const std::size_t end = i + stretch;
      while (i < end) {
        const std::uintptr_t base =
            header_.zone_base + (std::uintptr_t{chunks[i].index} << d::kChunkShift);
        d::ChunkHeader h;
        pages_.read(base, &h, sizeof h);
        const auto block = reinterpret_cast<std::uintptr_t>(h.huge_block);
        if (h.kind != d::ChunkKind::kHuge || h.run_chunks == 0 || h.run_chunks > end - i ||
            block < base + kPageSize ||
            block - base + h.huge_size > std::uint64_t{h.run_chunks} * d::kChunkSize) {
          i = end;  // the rest of the stretch cannot be told apart
          break;
        }
        huge_runs_.push_back({base, h.run_chunks, block, h.huge_size});
        i += h.run_chunks;
      }
    }
  }
  for (const HugeRun& run : huge_runs_) {
    if (address < run.base || address - run.base >= std::uint64_t{run.chunks} * d::kChunkSize) {
      continue;
    }
    if (address - run.base < sizeof(d::ChunkHeader)) {
      return metadata(run.base, sizeof(d::ChunkHeader), "huge run header");
    }
    if (address >= run.block && address - run.block < run.size) {
      BlockInfo info;
      info.kind = BlockKind::kHugeBlock;
      info.address = run.block;
      info.size = run.size;
      return info;
    }
    return unattributed("bytes of a huge run outside its block");
  }
  return unattributed("the huge run's header is missing or does not describe this chunk");
}

}  // namespace reheap::snap
