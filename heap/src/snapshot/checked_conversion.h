// Restoring a snapshot saved by the other build flavour: with REHEAP_CHECKS (checked, also the
// asan and tsan presets) or without (release).
//
// The two flavours save the same allocator state word for word (heap_state.h has no member that
// depends on the flavour; chunk headers, page tables, free-run bins, cursors and free lists are
// alike) but for one thing: the checked build's free-block shadow, one bit per 8 bytes of class
// lanes in each group's shadow lane (layout.h, class_lanes.cpp), set exactly for the blocks on a
// class free list. A release heap has no shadow, so a checked build restoring its snapshot
// rebuilds one from the free lists; a release build restoring a checked snapshot throws the
// shadow away. Everything else a checked build does differently (quarantined chunks made
// inaccessible, misuse reports, ASan poisoning) is the process's, not the heap's, and is never
// saved.
//
// Files of one chain all come from one flavour (snapshot_chain refuses a mix), and a Snapshotter
// attached to a converted snapshot writes a full snapshot next (conversion_obstacle): the
// conversion rewrites pages behind the write tracker's back, so the parent file no longer holds
// what memory does.
#pragma once

#include <string>

#include "../heap_state.h"
#include "reheap/snapshot_file.h"

namespace reheap::detail::snapshot {

// True if a heap restored from the file with header `h` needs convert_build_flavour.
inline bool needs_conversion(const SnapshotHeader& h) noexcept { return h.checked_build != kChecks; }

// Makes the shadow of the heap `heap`, just restored from the file with header `h`, what this
// build expects. Call it only once check_restored_state has accepted the state: it follows the
// free lists, which are trusted only after that check (and still walks at most `carved` blocks
// per class).
void convert_build_flavour(const SnapshotHeader& h, HeapState* heap) noexcept;

// Why the next increment cannot build on the snapshot with header `h` that a heap was restored
// from (Snapshotter::attach), or "" if it can.
std::string conversion_obstacle(const SnapshotHeader& h);

// "with" or "without": the phrase the messages use for a checked and a release flavour.
inline const char* checks_phrase(bool checked) noexcept { return checked ? "with" : "without"; }

}  // namespace reheap::detail::snapshot
