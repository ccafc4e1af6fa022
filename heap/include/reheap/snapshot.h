// Snapshots: a heap's whole state saved page by page, and restored at the same addresses.
//
// A snapshot holds the pages of the heap's chunks that are in use and not all zero (zero pages
// are holes), which includes the allocator's own state (it lives in those pages), the heap's root
// pointer (Heap::set_root) and the layout of the saving program (program_layout.h). Restoring
// takes the same chunks of the zone again, in this process or another one, reads the pages back
// in place, relocates the heap's pointers into the program if the program moved or was rebuilt
// (program_refs.h), and hands back a heap whose root and every pointer inside it are valid;
// allocation and free continue normally.
//
// Chains: a full snapshot, then increments holding only the pages written since their parent.
// Increments need write tracking from the kernel (userfaultfd write-protect, Linux >= 6.7, see
// heap/src/os/write_tracker.h); where it is missing an incremental request writes a full
// snapshot and says why in SnapshotInfo. restore() follows a chain from its last file; compact()
// folds a chain into one full snapshot.
//
// Rules: save between operations on the heap, on the thread using it (the heap may be current or
// not; the snapshot code allocates nothing in it). Errors throw SnapshotError naming the file and
// the problem. A failed save leaves the previous file intact and loses no tracked write (the next
// increment still holds it); a failed restore leaves nothing behind in the zone. A heap with a
// foreign free (HeapStats::foreign_frees: a block of it freed while it was not current, which
// release builds ignore) is not saved (misuse): an object in it may point outside it.
// The file format is specified in heap/SNAPSHOT_FORMAT.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "reheap/byte_stream.h"
#include "reheap/heap.h"
#include "reheap/program_layout.h"
#include "reheap/snapshot_error.h"
#include "reheap/snapshot_file.h"

namespace reheap {

struct SnapshotInfo {
  SnapshotKind kind = SnapshotKind::kFull;
  std::uint64_t id = 0;
  std::uint64_t parent_id = 0;
  std::uint64_t generation = 0;
  std::uint64_t pages_written = 0;       // data pages in the file
  std::uint64_t zero_pages = 0;          // skipped as holes (full) or written as zero runs (increment)
  std::uint64_t bytes_written = 0;       // file size
  std::string tracking;                  // the write-tracking mechanism, or "none: <why>"
  std::string fallback_reason;           // why an incremental request wrote a full snapshot
};

// Saves snapshots of one heap and tracks its writes between them. Keep one Snapshotter per heap
// for as long as you take snapshots of it; destroy it before the heap (a destroyed heap makes
// every later call throw kMisuse).
// Whether a Snapshotter asks the kernel to track the heap's writes. kOff makes every save full:
// what a holder of whole in-memory checkpoints wants, since tracking costs page-table pages and
// splits the zone's mapping (about 30k tracked heaps fit under vm.max_map_count).
enum class WriteTracking { kAuto, kOff };

class Snapshotter {
 public:
  explicit Snapshotter(Heap& heap, WriteTracking tracking = WriteTracking::kAuto);
  ~Snapshotter();
  Snapshotter(const Snapshotter&) = delete;
  Snapshotter& operator=(const Snapshotter&) = delete;

  // Writes a full snapshot to `file` crash-safely: a temporary file in the same directory,
  // fsync, rename over `file`, fsync of the directory. A crash at any moment leaves either the
  // old `file` or the new one, complete.
  //
  // Which files a save may replace. The Snapshotter builds one chain: the file of its last save
  // or attach (the parent of the next increment) and that file's parents back to a full
  // snapshot. An increment depends on every file of its chain, so save_increment() refuses
  // (kMisuse, "is an ancestor of the chain being built") to write one over any of them, however
  // `file` names it (compared after resolving ".", ".." and symlinks, and by device and inode),
  // and changes nothing when it refuses: no file, no tracked write. A full snapshot depends on
  // nothing, so save() - and a save_increment() that falls back to a full snapshot - may replace
  // any file, the last one included: it starts a new chain. Increments of the old chain that
  // hung on the replaced file are then refused by restore (kBrokenChain: their parent's id
  // differs), never applied to the wrong parent.
  //
  // With a state directory (node_identity.h) the file is listed in the node's registry before it
  // is renamed into place, and its chunks are held for its restore from then on (zone.h, "Held
  // for restore"); a registry that cannot take the line fails the save (kIo, kNoSpace), leaving
  // the old `file`. Delete snapshot files with remove_snapshot() to let their chunks go at once.
  SnapshotInfo save(const std::filesystem::path& file);

  // Writes the pages changed since the last successful save, save_increment or attach; the file
  // records that snapshot as its parent (by id, and by file name relative to this file's
  // directory). Writes a full snapshot instead, saying why in fallback_reason, when there is no
  // parent or no write tracking. `file` must not be a file of the chain being built (see save()).
  SnapshotInfo save_increment(const std::filesystem::path& file);

  // The same to any sink (crash safety is then the sink's business). `parent_file` is the name an
  // increment records for its parent.
  SnapshotInfo write(ByteSink& sink);
  SnapshotInfo write_increment(ByteSink& sink, const std::string& parent_file);

  // Declares that the heap's current state is the snapshot `file` (e.g. the heap was just
  // restored from it), so that the next save_increment() builds on it. Its chain (followed as
  // snapshot_chain() does, if it can be) becomes the chain being built. Refused (misuse) unless
  // `file` is the snapshot this process last restored the heap from or saved it as: an older
  // file of the same heap would make the next increment restore a state that never existed.
  void attach(const std::filesystem::path& file);

  // The mechanism ("userfaultfd-wp-async+PAGEMAP_SCAN") or "none: <why>".
  std::string tracking() const;

  Heap& heap() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

struct RestoreOptions {
  // kRelocate: pointers into the program are mapped to this process's layout (program_refs.h).
  LayoutCheck layout = LayoutCheck::kRelocate;
  // Refuses (kOverLimit) a heap whose committed bytes exceed this: the bytes its allocator state
  // really commits, which restore derives and checks against the header. The restored heap keeps
  // the limit it was saved with.
  std::size_t limit_bytes = kUnlimited;
  // kRelocate: map pointers into a shared library of another build by symbol too (for the
  // program's own libraries; a different libstdc++ or libc is refused unless this is set).
  bool relink_libraries = false;
};

// Restores the heap saved in `file`, applying the chain of parents first when it is an
// increment. If the zone is not reserved yet, it is reserved at the snapshot's base and size.
HeapPtr restore(const std::filesystem::path& file, const RestoreOptions& options = {});

// Restores a full snapshot from any source.
HeapPtr restore(ByteSource& source, const RestoreOptions& options = {});

// Restores a snapshot of `heap` in its place: `heap` (which must have the snapshot's id, e.g. the
// failed incarnation of a reactor that restarts from its last snapshot) is destroyed without
// running any destructor, and its chunks pass straight to the restored heap, so that no other
// thread creating heaps meanwhile can take them. `heap` is destroyed whatever the outcome.
HeapPtr restore_replacing(HeapPtr heap, const std::filesystem::path& file, const RestoreOptions& options = {});
HeapPtr restore_replacing(HeapPtr heap, ByteSource& source, const RestoreOptions& options = {});

// Writes the state the chain ending at `latest` describes as one full snapshot `out`
// (crash-safe), without restoring it: no zone or heap is involved.
SnapshotInfo compact(const std::filesystem::path& latest, const std::filesystem::path& out);

// Deletes the snapshot file `file` as std::filesystem::remove does (false if there was none) and
// lets this process's new heaps have the chunks it held for the file. With a state directory
// (node_identity.h), every snapshot file the node saves holds its chunks out of the way of the
// node's new heaps (zone.h, "Held for restore") until it is deleted this way, saved again with
// other chunks, or found gone (a process of the node starting, or one rewriting the registry
// after many saves). Deleting a file otherwise is safe too; its chunks are held a little longer.
bool remove_snapshot(const std::filesystem::path& file);  // throws std::filesystem::filesystem_error
bool remove_snapshot(const std::filesystem::path& file, std::error_code& error) noexcept;

}  // namespace reheap
