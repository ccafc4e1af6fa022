// The heaps the snapshot fuzzer starts from: seeds (valid snapshots made by the fuzzer binary
// itself, so that their zone and layout match the process that restores them) and a bystander
// heap that no input may ever change.
//
// Chunk placement is part of the design. The zone hands out the lowest free chunks first, so the
// bystander is made to sit between the seeds' chunks: its large chunk right after the seed heap's
// first large chunk, its huge run right after the seed heap's huge run. A restored heap whose
// state lies about how far its chunks reach (a large chunk's frontier, a huge block's size) then
// discards the bystander's pages when it is destroyed, which the target notices; without a
// neighbour, the damage would land in free chunks and go unseen.
//
// Chunks, with the bystander alive:   class 0 seed heap, 1 bystander, 2 seed heap's second
//                                     large   0 seed heap, 1 bystander, 2 seed heap's huge run,
//                                             3 bystander's huge run, 4 seed heap's second
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace reheap_fuzz {

struct Seed {
  std::string name;
  std::vector<std::uint8_t> bytes;
  // What the hostile-input generator needs to know beyond the bytes (0 where it does not apply):
  // a free list of at least two blocks, head first, and the huge block's usable size.
  std::uint64_t free_head = 0;
  std::uint64_t free_next = 0;
  std::uint64_t huge_size = 0;
};

// Creates the bystander (and the zone). Call it first in every mode of the fuzz target, before
// any seed is made or any input restored, so that every process places chunks the same way.
void create_bystander();

// Null if the bystander's blocks are as they were made and still its own; else what changed.
const char* bystander_damage();

// Gives back every page of the zone outside the bystander's chunks (madvise MADV_DONTNEED, so
// they read as zero again). A restored heap whose state lies can write outside its chunks, into
// chunks that are free; a later restore takes such a chunk and trusts its holes to be zero. Left
// alone, that garbage would make one input's outcome depend on the inputs before it: crashes that
// do not reproduce from their artefact, and resident pages that pile up until the RSS limit. After
// a restored heap is destroyed, no chunk but the bystander's is in use, so all of this is free.
// About 30 microseconds for a 64 TiB zone whose page tables are sparse.
void scrub_zone();

// Makes the seeds: an empty heap; a full snapshot of a heap with every kind of block, free lists,
// free page runs, two class chunks, two large chunks and a huge block, and a root; an increment
// after it; and a heap with a limit and over-aligned blocks. The heaps are destroyed on return.
std::vector<Seed> build_seeds();

}  // namespace reheap_fuzz
