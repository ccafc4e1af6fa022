// Snapshots of live reactors: what the runtime adds to heap snapshots (snapshot.h).
//
// A reactor's snapshot is its heap's snapshot. Before saving, the runtime writes into the
// reactor (so into the heap) what lives outside it: the timers with the time they have left,
// and the ids of its open sockets. After a restore it re-arms those timers, reports each socket
// closed (sockets do not survive a process), and calls on_restored, before any message.
#pragma once

#include <filesystem>

#include "reactor/cell.h"
#include "reheap/snapshot.h"

namespace reheap::detail {

class Worker;

// Worker thread, between two events of c.
SnapshotInfo save_reactor(Cell* c, const std::filesystem::path& file, bool increment);
// Worker thread: the in-memory checkpoint that kRestart falls back on.
void take_checkpoint(Cell* c);
// Worker thread, between two events of c: a full snapshot of c's reactor for a recorder's
// anchor, written through its Snapshotter (a heap has only one). kRestart does not restart from
// it (a spawn's anchor precedes on_start). The chain's next increment builds on `file`; after a
// write to `sink` it is written as a full snapshot, as after take_checkpoint.
void write_reactor_aside(Cell* c, ByteSink& sink);
void save_reactor_aside(Cell* c, const std::filesystem::path& file);
// Worker thread: replaces c's reactor by its last snapshot (file, else checkpoint), in place.
// Throws what restore throws; c then has no heap and no reactor.
void restore_in_place(Cell* c);
// Worker thread: the first hooks of a restored reactor.
void start_restored(Worker& w, Cell* c);
// The reactor a restored heap holds, checked: throws SnapshotError(kCorrupt) if its root is not
// one.
Reactor* reactor_of(Heap& heap, const std::filesystem::path& file);

// Which reactor a snapshot file holds, read without restoring it (read_snapshot_bytes: the run
// records of the file and its parents, and the data of the run holding the reactor). Throws
// SnapshotError(kCorrupt) as reactor_of does if its root is not a reactor, and what
// read_snapshot_bytes throws.
struct SavedReactor {
  ActorRef self;
  std::uint64_t events = 0;        // delivered before the snapshot
  std::uint64_t recording_id = 0;  // 0 if it was not recorded
};
SavedReactor read_saved_reactor(const std::filesystem::path& file);

}  // namespace reheap::detail
