// CellSnapshots: a live reactor's snapshot state, kept by the runtime (process memory): the
// Snapshotter of its chain (Runtime::snapshot, Reactor::request_snapshot) and, for kRestart, the
// newest file or an in-memory checkpoint to restart from (reactor_snapshot.h).
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "reheap/snapshot.h"

namespace reheap::detail {

struct CellSnapshots {
  std::unique_ptr<Snapshotter> snapshotter;
  bool tracks = false;                    // the snapshotter tracks writes (a chain), not checkpoints only
  std::vector<unsigned char> checkpoint;  // in-memory snapshot for kRestart (no file yet)
  std::filesystem::path last_snapshot;    // newest file of the chain

  void clear() {
    // Most reactors never snapshot: nothing to free (and path::clear re-parses its empty name).
    if (!snapshotter && checkpoint.capacity() == 0 && last_snapshot.empty()) {
      tracks = false;
      return;
    }
    snapshotter.reset();
    tracks = false;
    checkpoint.clear();
    checkpoint.shrink_to_fit();
    last_snapshot.clear();
  }
};

}  // namespace reheap::detail
