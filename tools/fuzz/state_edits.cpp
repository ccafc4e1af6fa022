#include "state_edits.h"

#include <algorithm>

#include "snapshot_image.h"
#include "word_values.h"

namespace reheap_fuzz {

namespace {

constexpr std::size_t kNowhere = ~std::size_t{0};

std::uint64_t page_of(const Geometry& g, std::uint64_t address) { return address - address % g.page_size; }

// The pages where the allocator keeps its metadata, for the listed chunks (the first 256: a
// mutant may list a million).
std::vector<std::uint64_t> metadata_pages(const Geometry& g) {
  std::vector<std::uint64_t> pages;
  for (std::size_t i = 0; i < g.chunks.size() && i < 256; ++i) {
    const ChunkEntry& c = g.chunks[i];
    const std::uint64_t base = g.chunk_address(c.index);
    if (c.use == kUseLarge) {
      for (std::uint64_t k = 0; k < g.large_metadata_pages(); ++k) pages.push_back(base + k * g.page_size);
    } else {
      pages.push_back(g.header_page(c));  // a huge run's later chunks: block data, harmless
    }
  }
  return pages;
}

bool is_page_table(const Geometry& g, std::uint64_t page) {
  const ChunkEntry* c = g.chunk_holding(page);
  if (c == nullptr || c->use != kUseLarge) return false;
  const std::uint64_t k = (page - g.chunk_address(c->index)) / g.page_size;
  return k >= 1 && k < g.large_metadata_pages();
}

// A random saved 8-byte word whose value is an address in the zone (a link), by reservoir
// sampling over the data runs; 0 if there is none.
std::uint64_t sample_link(const std::vector<std::uint8_t>& file, const SnapshotImage& image, const Geometry& g,
                          FuzzRng& rng) {
  std::uint64_t chosen = 0;
  std::uint64_t seen = 0;
  for (const ImageRun& run : image.runs()) {
    if (run.zero()) continue;
    const std::size_t bytes = std::size_t{run.pages} * g.page_size;
    for (std::size_t off = 0; off + 8 <= bytes; off += 8) {
      if (g.in_zone(load_le(file.data() + run.data + off, 8)) && rng.below(++seen) == 0) {
        chosen = run.address + off;
      }
    }
  }
  return chosen;
}

// The extent of a page worth editing: up to a little past its last non-zero word, since the
// state and headers sit at the front of their pages and the rest is zero padding.
std::size_t used_extent(const std::vector<std::uint8_t>& file, std::size_t page_offset, std::uint64_t page_size) {
  std::size_t last = 0;
  for (std::size_t off = 0; off + 8 <= page_size; off += 8) {
    if (load_le(file.data() + page_offset + off, 8) != 0) last = off + 8;
  }
  return std::min<std::size_t>(page_size, last + 64);
}

// Overwrites the word at `address` with a value fit for what it holds and describes the edit.
std::string rewrite(std::vector<std::uint8_t>& file, const SnapshotImage& image, const Geometry& g, FuzzRng& rng,
                    std::uint64_t address, std::size_t width, const char* how) {
  const std::size_t at = image.offset_of(address, width);
  if (at == kNowhere) return "";
  const std::uint64_t old = load_le(file.data() + at, width);
  Choice c;
  if (width == 2 && is_page_table(g, page_of(g, address))) {
    c = pick_page_entry(rng, static_cast<std::uint16_t>(old));
  } else if (width == 8 && rng.chance(12) &&
             image.offset_of(address - address % g.page_size, g.page_size) != kNowhere) {
    // Another word of the same page: two lists sharing a node, a count copied into a link. (A
    // mutated file's run may not hold the whole page: then this edit is not made.)
    const std::size_t page_at = image.offset_of(address - address % g.page_size, g.page_size);
    const std::uint64_t other = load_le(file.data() + page_at + 8 * rng.below(g.page_size / 8), 8);
    c = {other, "another word of the same page"};
  } else if (width == 8 && (g.in_zone(old) || rng.chance(35))) {
    c = pick_address(g, rng, address, old);
  } else {
    c = pick_count(g, rng, old, width);
  }
  store_le(file.data() + at, width, c.value);
  return std::string(how) + " " + std::to_string(width) + "-byte word at " + hex(address) + " (" +
         region_of(g, address) + " +" + hex(address % g.page_size) + ") " + hex(old) + " -> " + hex(c.value) +
         " (" + c.why + ")";
}

std::size_t pick_width(FuzzRng& rng) {
  const std::size_t r = rng.below(10);
  return r < 6 ? 8 : r < 9 ? 4 : 2;
}

// A word in one of the saved metadata pages (headers, the heap's state, page tables).
std::string edit_metadata(std::vector<std::uint8_t>& file, const SnapshotImage& image, const Geometry& g,
                          FuzzRng& rng) {
  std::vector<std::uint64_t> saved;
  for (std::uint64_t page : metadata_pages(g)) {
    if (image.offset_of(page, g.page_size) != kNowhere) saved.push_back(page);
  }
  if (saved.empty()) return "";
  const std::uint64_t page = saved[rng.below(saved.size())];
  const std::size_t page_at = image.offset_of(page, g.page_size);
  if (is_page_table(g, page)) {
    // Entries describe runs; most are zero, so prefer the ones in use.
    std::vector<std::size_t> live;
    for (std::size_t off = 0; off < g.page_size; off += 2) {
      if (load_le(file.data() + page_at + off, 2) != 0) live.push_back(off);
    }
    const std::size_t off = !live.empty() && rng.chance(80) ? live[rng.below(live.size())] : 2 * rng.below(g.page_size / 2);
    return rewrite(file, image, g, rng, page + off, 2, "page-table");
  }
  const std::size_t width = pick_width(rng);
  const std::size_t extent = used_extent(file, page_at, g.page_size);
  return rewrite(file, image, g, rng, page + width * rng.below(extent / width), width, "metadata");
}

// Makes a left-out metadata page (a hole: all zero when saved) present, then edits it.
std::string edit_hole(std::vector<std::uint8_t>& file, const Geometry& g, FuzzRng& rng) {
  const SnapshotImage before(file.data(), file.size(), g.page_size);
  std::vector<std::uint64_t> holes;
  for (std::uint64_t page : metadata_pages(g)) {
    if (before.run_at(page) == nullptr) holes.push_back(page);
  }
  if (holes.empty()) return "";
  const std::uint64_t page = holes[rng.below(holes.size())];
  if (!insert_zero_data_run(file, g.page_size, page, 1)) return "";
  const SnapshotImage image(file.data(), file.size(), g.page_size);
  const std::size_t width = is_page_table(g, page) ? 2 : pick_width(rng);
  const std::uint64_t span = is_page_table(g, page) || rng.chance(30) ? g.page_size : 512;
  return rewrite(file, image, g, rng, page + width * rng.below(span / width), width, "hole page made present,");
}

}  // namespace

const char* region_of(const Geometry& g, std::uint64_t address) {
  const ChunkEntry* c = g.chunk_holding(address);
  if (c == nullptr) return g.in_zone(address) ? "unlisted chunk" : "outside the zone";
  const std::uint64_t off = address - g.chunk_address(c->index);
  switch (c->use) {
    case kUseClass: {
      const std::uint64_t header = Geometry::kHeaderLane * Geometry::kLaneSize;
      if (off >= header && off < header + g.page_size) {
        return c->index == g.first_chunk() && off >= header + Geometry::kStateOffset ? "heap state" : "class chunk header";
      }
      const std::uint64_t group = off / (32 * Geometry::kLaneSize), slot = (off / Geometry::kLaneSize) % 32;
      const bool block = group == 0 ? slot < Geometry::kHeaderLane : group <= Geometry::kHeaderLane && slot < 31;
      return block ? "class block" : "class chunk side lane";
    }
    case kUseLarge:
      if (off < g.page_size) return "large chunk header";
      return off < g.large_metadata_pages() * g.page_size ? "page table" : "large run";
    case kUseHuge:
      return off < g.page_size ? "huge header (or block)" : "huge block";
    default:
      return "chunk of unknown use";
  }
}

std::string edit_state(std::vector<std::uint8_t>& file, const Geometry& g, FuzzRng& rng) {
  const std::size_t kind = rng.below(100);
  if (kind < 6) {
    std::string done = edit_hole(file, g, rng);
    if (!done.empty()) return done;
  }
  const SnapshotImage image(file.data(), file.size(), g.page_size);
  if (kind < 45) {
    std::string done = edit_metadata(file, image, g, rng);
    if (!done.empty()) return done;
  }
  const std::uint64_t link = sample_link(file, image, g, rng);
  if (link == 0) return edit_metadata(file, image, g, rng);
  if (kind < 75) return rewrite(file, image, g, rng, link, 8, "link");
  // Follow the link and edit what it points at: a free block's next pointer, a free run's
  // links, a chunk header reached from the state. These words are often in no metadata page.
  const std::size_t link_at = image.offset_of(link, 8);
  if (link_at == kNowhere) return rewrite(file, image, g, rng, link, 8, "link");
  const std::uint64_t target = load_le(file.data() + link_at, 8) & ~std::uint64_t{7};
  std::string done = rewrite(file, image, g, rng, target + (rng.chance(70) ? 0 : 8), 8, "word a link points at:");
  return done.empty() ? rewrite(file, image, g, rng, link, 8, "link") : done;
}

bool poke(std::vector<std::uint8_t>& file, const Geometry& g, std::uint64_t address, std::size_t width,
          std::uint64_t value) {
  const SnapshotImage image(file.data(), file.size(), g.page_size);
  const std::size_t at = image.offset_of(address, width);
  if (at == kNowhere) return false;
  store_le(file.data() + at, width, value);
  return true;
}

bool peek(const std::vector<std::uint8_t>& file, const Geometry& g, std::uint64_t address, std::size_t width,
          std::uint64_t* value) {
  const SnapshotImage image(file.data(), file.size(), g.page_size);
  const std::size_t at = image.offset_of(address, width);
  if (at == kNowhere) return false;
  *value = load_le(file.data() + at, width);
  return true;
}

std::vector<std::uint64_t> find_words(const std::vector<std::uint8_t>& file, const Geometry& g,
                                      std::uint64_t begin, std::uint64_t end, std::size_t width,
                                      const std::function<bool(std::uint64_t)>& match) {
  const SnapshotImage image(file.data(), file.size(), g.page_size);
  std::vector<std::uint64_t> out;
  for (std::uint64_t a = begin; a + width <= end; a += width) {
    const std::size_t at = image.offset_of(a, width);
    if (at != kNowhere && match(load_le(file.data() + at, width))) out.push_back(a);
  }
  return out;
}

}  // namespace reheap_fuzz
