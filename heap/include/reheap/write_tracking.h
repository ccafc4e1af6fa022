// Write tracking across a whole-process checkpoint.
//
// Incremental snapshots (snapshot.h) learn which pages a heap wrote from one userfaultfd the
// process shares. A whole-process checkpointer such as CRIU cannot dump a userfaultfd, so before
// it runs every tracked range is unregistered and the descriptor closed (suspend), and after it
// (in the original process, or in the restored one) a fresh descriptor protects every range again
// (resume). The writes made in between are unknown, so every Snapshotter that was tracking writes
// its next snapshot in full (SnapshotInfo::fallback_reason says why) and increments after that
// one. Runtime::checkpoint_process does all of this at its barrier; a program checkpointing
// itself without the runtime calls these two around the dump.
//
// Rules: call them with no snapshot being saved on any thread, suspend before resume, each once;
// while suspended, saves are full and new tracking is refused.
#pragma once

#include <cstddef>
#include <string>

namespace reheap {

struct WriteTrackingCensus {
  std::size_t trackers = 0;  // Snapshotters (and other trackers) with tracked ranges
  std::size_t ranges = 0;    // ranges unregistered (suspend) or registered again (resume)
  std::string error;         // resume: why some or all tracking could not be restored, or ""
};

// Unregisters every tracked range and closes the process's tracking descriptors. A no-op (zero
// census) if already suspended.
WriteTrackingCensus suspend_write_tracking();

// Opens fresh descriptors and protects every tracked range again. A range that cannot be
// registered again is forgotten (its Snapshotter keeps saving in full) and `error` says why.
// A no-op (zero census) if not suspended.
WriteTrackingCensus resume_write_tracking();

bool write_tracking_suspended() noexcept;

// Whether this process can track writes at all (see Snapshotter::tracking); if not, `why`.
bool write_tracking_available(std::string* why = nullptr);

}  // namespace reheap
