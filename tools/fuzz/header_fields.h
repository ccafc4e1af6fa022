// The snapshot header as the editors see it: an editable msgpack tree (HeaderTree) and the few
// facts read from it that locate the allocator's state in the pages (Geometry).
//
// The reader (heap/src/snapshot/format.cpp) is strict; this side is lenient on purpose: a mutant
// may lack fields or hold the wrong types, and the editors still want to work on what is there.
// Missing facts take the values every valid version-1 file has (4 KiB pages, 64 MiB chunks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#define MSGPACK_NO_BOOST 1
#include <msgpack.hpp>

namespace reheap_fuzz {

// A chunk's use, as the header's `chunks` entries say (SNAPSHOT_FORMAT.md, "Header").
inline constexpr std::uint64_t kUseClass = 0;
inline constexpr std::uint64_t kUseLarge = 1;
inline constexpr std::uint64_t kUseHuge = 2;

struct ChunkEntry {
  std::uint64_t index = 0;
  std::uint64_t use = kUseClass;
  bool fresh = false;
};

// The chunk geometry of a snapshot. The offsets of the allocator's metadata inside a chunk are
// the format's (SNAPSHOT_FORMAT.md and heap/README.md, "Memory layout"): a class chunk keeps its
// header in lane 21 (21 * 64 KiB from its base), the heap's first chunk also the heap's state,
// 64 bytes into that page; a large chunk keeps its header in page 0 and its 16-bit page table in
// the pages after it; a huge run keeps its header in page 0.
struct Geometry {
  std::uint64_t page_size = 4096;
  std::uint64_t chunk_size = std::uint64_t{64} << 20;
  std::uint64_t zone_base = 0;
  std::uint64_t zone_size = 0;
  std::uint64_t heap_id = 0;  // first chunk index + 1 in the low 32 bits, a generation above
  std::uint64_t first_chunk() const noexcept { return (heap_id & 0xffffffffu) - 1; }
  std::uint64_t root = 0;
  std::uint64_t limit = 0;
  std::uint64_t committed = 0;
  std::vector<ChunkEntry> chunks;

  static constexpr std::uint64_t kLaneSize = std::uint64_t{64} << 10;
  static constexpr std::uint64_t kHeaderLane = 21;
  static constexpr std::uint64_t kStateOffset = 64;

  std::uint64_t chunk_address(std::uint64_t index) const noexcept { return zone_base + index * chunk_size; }
  std::uint64_t zone_chunks() const noexcept { return chunk_size == 0 ? 0 : zone_size / chunk_size; }
  std::uint64_t class_half_chunks() const noexcept { return zone_chunks() / 2; }
  bool in_zone(std::uint64_t a) const noexcept { return a >= zone_base && a - zone_base < zone_size; }
  // The listed chunk holding `address`, or null.
  const ChunkEntry* chunk_holding(std::uint64_t address) const noexcept;
  bool listed(std::uint64_t index) const noexcept;
  // Where a chunk's header is: its class header page, or page 0 of a large chunk or huge run.
  std::uint64_t header_page(const ChunkEntry& c) const noexcept {
    return chunk_address(c.index) + (c.use == kUseClass ? kHeaderLane * kLaneSize : 0);
  }
  // The heap's state: 64 bytes into the header page of its first chunk.
  std::uint64_t state_address() const noexcept {
    return chunk_address(first_chunk()) + kHeaderLane * kLaneSize + kStateOffset;
  }
  // Pages of a large chunk that hold metadata: its header, then one 16-bit entry per page.
  std::uint64_t large_metadata_pages() const noexcept {
    return page_size == 0 ? 1 : 1 + (chunk_size / page_size * 2 + page_size - 1) / page_size;
  }
  // A chunk of the zone that the header does not list, chosen by `pick`: 0 next to a listed one,
  // 1 the last of the class half (never made accessible by a small process), 2 the middle of
  // the large half. Returns the chunk's index.
  std::uint64_t unlisted_chunk(unsigned pick) const noexcept;
};

// The header as an editable tree of msgpack objects. Edits change the tree in place; new arrays
// and strings come from the tree's own zone, so they live as long as the tree.
class HeaderTree {
 public:
  // Decodes the header bytes; false if they are not one msgpack map.
  bool decode(const std::uint8_t* data, std::size_t size);
  std::vector<std::uint8_t> encode() const;

  msgpack::object& root() noexcept { return root_; }
  // The top-level value of `key`, or null.
  msgpack::object* find(std::string_view key) noexcept;
  // Room for `n` objects or `n` bytes, owned by the tree.
  msgpack::object* new_objects(std::size_t n);
  char* new_bytes(std::size_t n);

  // The facts above, with defaults for what is missing or ill-typed.
  Geometry geometry() const;

 private:
  msgpack::object_handle handle_;
  msgpack::object root_;
};

// The file `file` with its header replaced by `header` and the preamble's header length fixed.
// `old_length` is the current header's length. The caller reseals the checksums.
std::vector<std::uint8_t> with_header(const std::uint8_t* file, std::size_t size, std::size_t old_length,
                                      const std::vector<std::uint8_t>& header);

}  // namespace reheap_fuzz
