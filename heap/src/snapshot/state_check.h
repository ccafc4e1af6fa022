// The allocator-state check a restored heap passes before it is handed out.
//
// A snapshot's checksums prove that the file is the one that was written, not that what it
// says is true: a file can be edited and resealed. Every word the allocator will later trust
// (chunk headers, chunk lists, page tables, free-run bins, class cursors and free lists, the
// accounting) came from the file, so each is checked here against the invariants of
// heap_state.h and against the chunks the header lists, which are the only memory the restore
// took. The check reads nothing outside those chunks: every pointer is placed in a listed chunk
// of the right kind before it is followed, and every walk is bounded, so a lying file ends in a
// SnapshotError naming the broken invariant, never in a read or a write of memory the heap does
// not own (heap/SNAPSHOT_FORMAT.md, "What restore checks", lists the invariants).
#pragma once

#include <cstddef>
#include <string>

#include "reheap/snapshot_file.h"

namespace reheap::detail::snapshot {

// Checks the allocator state of the heap just restored from a file with header `h` (its chunks
// taken and filled). Throws SnapshotError(kCorrupt) naming `name` and the invariant. Returns the
// committed bytes derived from the state (equal to what the state and the header say).
std::size_t check_restored_state(const SnapshotHeader& h, const std::string& name);

}  // namespace reheap::detail::snapshot
