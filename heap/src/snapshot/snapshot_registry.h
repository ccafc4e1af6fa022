// The registry of a node's saved snapshots: the snapshot files the processes of a node wrote,
// listed in the node's state directory, so that each later process of the node holds the chunks
// those files need and places its new heaps around them (zone.h, "Held for restore").
//
// The file: <state dir>/node-<n>.snapshots, text. A first line "reheap snapshot registry 1", then
// one line per file: 16 hex digits (the XXH3 checksum of the rest of the line), a space, and the
// file's absolute path, with '%', '\n' and '\r' written as %25, %0A and %0D. Only paths: a file's
// chunks are read from its own header when a process starts. So saving again under a listed name
// (a service replacing its snapshot, the common case) costs the registry nothing but the lock,
// and a file replaced by another snapshot holds exactly what that snapshot needs.
//
// Every change happens under the node's lock (node_state.h):
//   - A save whose file is not listed appends its line and fsyncs the registry before it renames
//     the file into place, and renames it while still holding the lock. So a snapshot file is
//     never in place unlisted, and a process pruning the registry never drops a line whose file
//     is about to appear. A crash after the append leaves a line whose file is missing or still
//     the old version: harmless, and pruned later.
//   - A process starting (the zone's reservation) reads every line, drops those whose file is
//     gone or is not a snapshot any more, and rewrites the registry if it dropped any (temporary
//     file, fsync, rename, fsync of the directory).
//   - A process that appended many lines (a rotating recording anchor, a service saving under a
//     new name each time) rewrites it the same way, dropping the files deleted meanwhile.
// Only the last line can be cut short (no newline), by a crash during the append, before the
// fsync its save waits for: it is ignored. Any other bad line is corruption: the process's zone is
// not reserved, and the message names the registry and what to do.
//
// In the process: every file listed when it started, or saved by it since, holds its chunks in
// the zone (ZoneImpl::hold) until this process saves it again (the new version's chunks are held
// instead), deletes it with remove_snapshot(), or finds it gone when it rewrites the registry.
// Processes of one node running at the same time do not see each other's new files.
//
// Without a state directory none of this happens: there is no registry and nothing is held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "reheap/snapshot_file.h"

namespace reheap::detail {
class NodeLock;
}

namespace reheap::detail::snapshot {

struct HeldRun {
  std::uint32_t first = 0;  // zone chunk index
  std::uint32_t count = 0;
};

// The chunks of `chunks` (ascending indexes, as a header lists them) as runs.
std::vector<HeldRun> runs_of(const std::vector<SnapshotChunk>& chunks);

// At the zone's reservation, before anything is reserved: reads and prunes the registry of the
// settled identity's node, and returns the chunk runs its files need in the zone at
// [zone_base, zone_base + zone_size) (files of another zone hold nothing). They become this
// process's holds. Without a state directory: none. Throws std::system_error (the state
// directory) or std::runtime_error (a corrupt registry), naming the file.
std::vector<HeldRun> load_registry(std::uintptr_t zone_base, std::size_t zone_size);

// A snapshot file being put in place by AtomicFile::commit (file_io.h), around its rename. Does
// nothing without a state directory.
class Publication {
 public:
  // `target`: the file's absolute path; `runs`: the chunks the new version needs.
  Publication(const std::filesystem::path& target, std::vector<HeldRun> runs);
  ~Publication();
  Publication(const Publication&) = delete;
  Publication& operator=(const Publication&) = delete;

  // Takes the node's lock and lists the file if it is not listed (append, fsync). Throws
  // SnapshotError (kIo, kNoSpace, kCorrupt) naming the registry; nothing changed then.
  void before_rename();
  // The rename happened: the file's chunks are held in place of the old version's, the registry
  // is rewritten if enough lines may be stale, and the lock is let go.
  void after_rename() noexcept;

 private:
  std::filesystem::path target_;
  std::vector<HeldRun> runs_;
  std::unique_ptr<NodeLock> lock_;
};

// `file` was deleted: what this process held for it is free for new heaps.
void forget(const std::filesystem::path& file) noexcept;

// The registry's path, or an empty path without a state directory (for messages).
std::filesystem::path registry_file();

}  // namespace reheap::detail::snapshot
