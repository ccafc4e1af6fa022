// Which allocation a heap address belongs to, told from a snapshot's saved pages alone: the
// allocator's view of a saved heap, for `diff` to say which block a changed byte lies in.
//
// The heap's geometry (heap/src/layout.h) makes most of the answer a matter of arithmetic on the
// address and the chunk list of the snapshot's header: in a class chunk, lane (a >> 16) & 31 is
// the size class, and blocks tile each lane from its start; the header lane holds the chunk
// header (and, in the heap's first chunk, the heap's state), the shadow lane the checked build's
// free bitmap. Large chunks and huge runs need their saved metadata: a large chunk's header page
// (its frontier) and page table (the runs tiling it), a huge run's header page (the block's
// address and size). Those pages are read from the snapshot, never from a heap: the tool maps
// none.
//
// What it cannot tell, it says so ("unattributed", with the reason): an address outside the
// heap's chunks, slack at the end of a lane, a page past a large chunk's frontier, metadata that
// is missing or does not describe the address. Whether a class block is live or free is not
// decided (that needs a walk of the free lists); a page run's free flag is known from its page
// table and reported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "reheap/snapshot_file.h"
#include "stored_pages.h"

namespace reheap::snap {

enum class BlockKind : std::uint8_t {
  kUnattributed,
  kClassBlock,  // a block of a size class
  kPageRun,     // a page run of a large chunk
  kHugeBlock,   // the block of a huge run
  kMetadata,    // the allocator's own data: chunk headers, the heap state, page tables, shadow
};

struct BlockInfo {
  BlockKind kind = BlockKind::kUnattributed;
  std::uintptr_t address = 0;  // of the block, run or metadata structure
  std::uint64_t size = 0;      // its bytes
  unsigned size_class = 0;     // kClassBlock
  bool free = false;           // kPageRun: the page table marks the run free
  std::string what;            // kMetadata: which structure; kUnattributed: why

  std::uint64_t offset(std::uintptr_t a) const { return a - address; }
  bool attributed() const { return kind != BlockKind::kUnattributed; }
};

const char* block_kind_name(BlockKind kind);

class BlockMap {
 public:
  BlockMap(const SnapshotHeader& header, const StoredPages& pages);

  BlockInfo locate(std::uintptr_t address);

 private:
  struct PageRunEntry {
    std::uint32_t first = 0;  // page in the chunk
    std::uint32_t pages = 0;
    bool free = false;
  };
  struct LargeChunk {  // a large chunk's metadata, read once
    bool valid = false;
    std::string why;  // when not valid
    std::uint32_t frontier = 0;
    std::vector<PageRunEntry> runs;  // tiling [kFirstRunPage, tiled_to), ascending
    std::uint32_t tiled_to = 0;      // < frontier: the page table stops making sense here
  };
  struct HugeRun {
    std::uintptr_t base = 0;
    std::uint32_t chunks = 0;
    std::uintptr_t block = 0;
    std::uint64_t size = 0;
  };

  BlockInfo in_class_chunk(std::uintptr_t chunk, std::uintptr_t address) const;
  BlockInfo in_large_chunk(std::uintptr_t chunk, std::uintptr_t address);
  BlockInfo in_huge_run(std::uintptr_t address);
  const LargeChunk& large_chunk(std::uintptr_t chunk);

  const SnapshotHeader& header_;
  const StoredPages& pages_;
  std::string geometry_error_;  // non-empty: the snapshot's geometry is not this build's
  std::map<std::uintptr_t, LargeChunk> large_;
  std::vector<HugeRun> huge_runs_;  // found on first need
  bool huge_runs_read_ = false;
};

}  // namespace reheap::snap
