#include "word_values.h"

#include <cstdio>

namespace reheap_fuzz {

namespace {

constexpr std::uint64_t kGroupSize = std::uint64_t{2} << 20;  // 32 lanes of 64 KiB
constexpr std::uint64_t kClasses = 21;

// Lane n of class c (heap/src/layout.h): group 0's lane c, else group c + 1's lane n - 1.
std::uint64_t class_lane(std::uint64_t c, std::uint64_t n) {
  return n == 0 ? c * Geometry::kLaneSize : (c + 1) * kGroupSize + (n - 1) * Geometry::kLaneSize;
}

// An offset inside a chunk that the allocator gives meaning to.
std::uint64_t chunk_offset(const Geometry& g, FuzzRng& rng, const ChunkEntry* c) {
  const std::uint64_t header = c != nullptr && c->use == kUseClass ? Geometry::kHeaderLane * Geometry::kLaneSize : 0;
  switch (rng.below(7)) {
    case 0: return 0;
    case 1: return header;                                   // the chunk's header
    case 2: return header + Geometry::kStateOffset;          // where a first chunk keeps the state
    case 3: return header + 8 * rng.below(64);               // a field of the header or the state
    case 4: return g.page_size * rng.below(g.chunk_size / g.page_size);  // a page
    case 5: return class_lane(rng.below(kClasses), rng.below(32));  // a lane
    default: return rng.chance(50) ? g.chunk_size - 8 : g.chunk_size;  // its last word; one past
  }
}

}  // namespace

std::string hex(std::uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "%#llx", static_cast<unsigned long long>(v));
  return text;
}

Choice pick_address(const Geometry& g, FuzzRng& rng, std::uint64_t where, std::uint64_t current) {
  const ChunkEntry* own = where != 0 ? g.chunk_holding(where) : nullptr;
  switch (rng.below(12)) {
    case 0: return {0, "null"};
    case 1:
    case 2: {
      if (g.chunks.empty()) break;
      const ChunkEntry& c = g.chunks[rng.below(g.chunks.size())];
      return {g.chunk_address(c.index) + chunk_offset(g, rng, &c), "in a listed chunk"};
    }
    case 3: {
      if (own == nullptr) break;
      return {g.chunk_address(own->index) + g.page_size * rng.below(g.chunk_size / g.page_size),
              "a page of its own chunk"};
    }
    case 4:
    case 5: {
      const std::uint64_t index = g.unlisted_chunk(static_cast<unsigned>(rng.below(3)));
      return {g.chunk_address(index) + chunk_offset(g, rng, nullptr), "in an unlisted chunk of the zone"};
    }
    case 6: {
      const std::uint64_t outside[] = {g.zone_base - 8, g.zone_base - g.page_size, g.zone_base + g.zone_size,
                                       g.zone_base + g.zone_size - 8, 0x1000, 0x7fff8000,
                                       std::uint64_t{1} << 47, std::uint64_t{1} << 63, ~std::uint64_t{7}};
      return {outside[rng.below(std::size(outside))], "outside the zone"};
    }
    case 7: {
      if (where == 0) break;
      return {rng.chance(60) ? where : where + (rng.chance(50) ? 8 : -8), "its own address (a cycle)"};
    }
    case 8: {
      const std::uint64_t steps[] = {8, 16, 64, g.page_size, g.chunk_size};
      const std::uint64_t step = steps[rng.below(std::size(steps))];
      return {rng.chance(50) ? current + step : current - step, "off by a step"};
    }
    case 9:
      return {current ^ (std::uint64_t{1} << (3 + rng.below(45))), "one bit flipped"};
    case 10: {
      if (g.chunks.empty()) break;
      // The header of the chunk next to a listed one: a list that leaves the heap's chunks.
      const ChunkEntry& c = g.chunks[rng.below(g.chunks.size())];
      const std::uint64_t index = rng.chance(50) ? c.index + 1 : c.index - 1;
      return {g.chunk_address(index) + (index < g.class_half_chunks() ? Geometry::kHeaderLane * Geometry::kLaneSize : 0),
              "the header of a neighbouring chunk"};
    }
    default:
      break;
  }
  return {g.zone_base + g.zone_size / 2 + g.chunk_size * rng.below(64), "the middle of the zone"};
}

Choice pick_count(const Geometry& g, FuzzRng& rng, std::uint64_t current, std::size_t width) {
  const std::uint64_t max = width >= 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * width)) - 1;
  const std::uint64_t pages_per_chunk = g.page_size == 0 ? 16384 : g.chunk_size / g.page_size;
  Choice c;
  switch (rng.below(11)) {
    case 0: c = {0, "zero"}; break;
    case 1: c = {1 + rng.below(3), "a small count"}; break;
    case 2: c = {max, "the maximum"}; break;
    case 3: c = {max / 2 + 1, "the sign bit"}; break;
    case 4: c = {current + 1, "one more"}; break;
    case 5: c = {current - 1, "one less"}; break;
    case 6: {
      const std::uint64_t edges[] = {pages_per_chunk - 1, pages_per_chunk, pages_per_chunk + 1,
                                     g.large_metadata_pages(), g.large_metadata_pages() - 1, 0x3fff, 0x4000};
      c = {edges[rng.below(std::size(edges))], "a page count at a chunk boundary"};
      break;
    }
    case 7: c = {current * (2 + rng.below(1024)), "multiplied"}; break;
    case 8: {
      if (g.chunks.empty()) { c = {current >> 1, "halved"}; break; }
      const ChunkEntry& e = g.chunks[rng.below(g.chunks.size())];
      c = {e.index + (rng.chance(50) ? 1 : 0), "another chunk's index or id"};
      break;
    }
    case 9: {
      const std::uint64_t sizes[] = {g.page_size, g.chunk_size, std::uint64_t{1} << 30, (std::uint64_t{1} << 30) + 1,
                                     std::uint64_t{1} << 40, g.zone_size, g.committed + 1, g.limit + 1};
      c = {sizes[rng.below(std::size(sizes))], "a size at a limit"};
      break;
    }
    default: c = {current ^ (std::uint64_t{1} << rng.below(8 * width)), "one bit flipped"}; break;
  }
  c.value &= max;
  return c;
}

Choice pick_page_entry(FuzzRng& rng, std::uint16_t current) {
  constexpr std::uint16_t kLength = 0x3fff, kHead = 0x4000, kFree = 0x8000;
  const std::uint16_t length = current & kLength;
  switch (rng.below(8)) {
    case 0: return {0, "page entry cleared"};
    case 1: return {static_cast<std::uint16_t>(current ^ kFree), "page entry free bit flipped"};
    case 2: return {static_cast<std::uint16_t>(current ^ kHead), "page entry head bit flipped"};
    case 3: return {static_cast<std::uint16_t>((current & ~kLength) | ((length + 1) & kLength)), "run one page longer"};
    case 4: return {static_cast<std::uint16_t>((current & ~kLength) | ((length - 1) & kLength)), "run one page shorter"};
    case 5: return {static_cast<std::uint16_t>((current & ~kLength) | kLength), "run of the maximal length"};
    case 6: return {static_cast<std::uint16_t>(kHead | kFree | (1 + rng.below(kLength))), "a free run of any length"};
    default: return {static_cast<std::uint16_t>(rng.next()), "any entry"};
  }
}

}  // namespace reheap_fuzz
