// A heap's state as one number: a 64-bit digest of the bytes of every page the heap may have
// written (the pages a snapshot would hold).
//
// Two heaps with equal digests almost surely hold the same bytes at the same addresses, so a
// replay compares the digest of the replayed heap with the one recorded after the same event
// and learns where the two runs first departed (reheap/recording.h). The digest walks every used
// page, so its cost grows with the heap, not with what the last event changed; hashing only the
// pages the write tracker saw written since the last digest is left for later.
#pragma once

#include <cstdint>

#include "reheap/heap.h"

namespace reheap {

// XXH3-64 over the heap's used page ranges, in address order, each range's address included.
// Call it between two uses of the heap (no thread may allocate in it meanwhile).
std::uint64_t used_pages_digest(const Heap& heap);

}  // namespace reheap
