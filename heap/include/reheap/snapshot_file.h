// Snapshot files, read without restoring them: the header, the page runs, the checksums and the
// parent chain. This is what `reheap-snap` (info, verify, diff) and restore are built on.
//
// A file is a preamble, a msgpack-encoded header, a sequence of page runs (address, length,
// checksum, data) in ascending address order, an end record and a trailer whose checksum covers
// the header and every run. heap/SNAPSHOT_FORMAT.md specifies it byte by byte.
//
// Every function here checks what it reads and throws SnapshotError (snapshot_error.h) on the
// first problem; nothing here maps memory or touches a heap.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reheap/byte_stream.h"
#include "reheap/program_layout.h"
#include "reheap/program_refs.h"
#include "reheap/size_class.h"
#include "reheap/snapshot_error.h"

namespace reheap {

enum class SnapshotKind : std::uint8_t { kFull = 0, kIncremental = 1 };

// What a chunk of the zone holds.
enum class ChunkUse : std::uint8_t { kClass = 0, kLarge = 1, kHuge = 2 };

struct SnapshotChunk {
  std::uint32_t index = 0;  // in the zone: its address is zone_base + index * chunk_size
  ChunkUse use = ChunkUse::kClass;
  // Increments only: the chunk was (re)acquired after the parent snapshot, so its pages in the
  // parent are stale; restore clears the chunk before applying this file's runs.
  bool fresh = false;
};

// Pages written in this file, by what they hold.
struct PageCounts {
  std::array<std::uint64_t, kNumClasses> by_class{};  // small and medium blocks, per size class
  std::uint64_t large = 0;     // page runs
  std::uint64_t huge = 0;      // huge blocks
  std::uint64_t metadata = 0;  // chunk headers, the heap's state, page tables, checked-build shadow
  std::uint64_t zero = 0;      // increments: pages written as "now all zero" (no data in the file)
};

struct SnapshotHeader {
  std::uint32_t format_version = 0;
  SnapshotKind kind = SnapshotKind::kFull;
  std::uint64_t id = 0;          // random, unique per snapshot
  std::uint64_t parent_id = 0;   // increments: the snapshot this one applies on top of
  std::string parent_file;       // increments: the parent's file name, relative to this file
  std::uint64_t generation = 0;  // 1 for a heap's first snapshot, +1 for each next one
  std::uint64_t created_unix_ns = 0;
  std::uint32_t page_size = 0;
  std::uint64_t chunk_size = 0;
  std::uintptr_t zone_base = 0;
  std::size_t zone_size = 0;
  bool checked_build = false;  // saved by a build with REHEAP_CHECKS (its heaps carry a shadow)
  std::uint64_t heap_id = 0;  // Heap::id(): first chunk index + 1, and its generation above
  std::uintptr_t root = 0;
  std::size_t limit_bytes = 0;
  std::size_t committed_bytes = 0;  // the heap's committed bytes when saved
  std::vector<SnapshotChunk> chunks;  // every chunk the heap owned, ascending index
  PageCounts pages;
  ProgramLayout layout;  // of the saving process, with its segments
  // The values in this file's pages that point into the saving program (program_refs.h), one
  // entry per distinct value. `has_program_refs` is false for files of writers that did not list
  // them: those restore only where the layout is the same.
  bool has_program_refs = false;
  std::vector<ProgramRef> program_refs;
  std::string tracking;  // write tracking used for this file, or "none: <why>"
  // The saving process's NodeIdentity (node_identity.h); -1 when the file does not say (written
  // before the header had these keys).
  std::int64_t saved_by_node = -1;
  std::int64_t saved_by_incarnation = -1;
};

// One page run: `pages` pages at `address`, either data (stored in the file) or zero.
struct PageRun {
  std::uintptr_t address = 0;
  std::uint32_t pages = 0;
  bool zero = false;           // increments: these pages are all zero now; no data follows
  std::uint64_t offset = 0;    // of the data in the file; the run's 8-byte checksum follows it
};

// Streams one snapshot: the header on construction, then the runs in order, then the trailer.
class SnapshotReader {
 public:
  // Opens and reads the header. `name` is used in messages.
  explicit SnapshotReader(const std::filesystem::path& file);
  SnapshotReader(ByteSource& source, std::string name);
  ~SnapshotReader();
  SnapshotReader(const SnapshotReader&) = delete;
  SnapshotReader& operator=(const SnapshotReader&) = delete;

  const SnapshotHeader& header() const noexcept;
  const std::string& name() const noexcept;

  // The next run, or false after the last one, once the trailer's checksum and counts have been
  // verified. The data of a data run must be consumed (read_data or skip_data) before the next
  // call; both verify the run's checksum.
  bool next(PageRun& run);
  void read_data(void* destination);  // run.pages * page_size bytes
  void skip_data();
  // Passes over the data without reading it, so without checking its checksum (a file: a seek;
  // other sources read it as skip_data does). The whole-file checksum, which covers the run
  // records and their checksums but not the data, is still checked at the end.
  void skip_data_unchecked();

  // Bytes consumed so far, and the file's size if known (0 for streams): for progress lines.
  std::uint64_t position() const noexcept;
  std::uint64_t size() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Opens `file` for reading, as every reader here does (also for reading page data by
// PageRun::offset): a close-on-exec descriptor the caller closes. Anything but a regular file is
// refused by its type before a byte is read and without blocking: a FIFO would block open()
// until a writer came and then deliver what that writer chose, a directory fails only at the
// first read, and /dev/zero never ends. Throws SnapshotError (kIo) naming the file and what it
// is, e.g. "x.snap: is a FIFO, not a regular file".
int open_snapshot_file(const std::filesystem::path& file);

// The header alone (the rest of the file is not read).
SnapshotHeader read_snapshot_header(const std::filesystem::path& file);

// Reads the whole file and checks every checksum and structural rule. Throws on the first
// problem; returns the header otherwise.
SnapshotHeader verify_snapshot(const std::filesystem::path& file);

// The heap's bytes [address, address + size) as `file` holds them, through its parents for an
// increment, without restoring anything: every run record of the chain is read, but only the data
// of the runs that overlap the range, whose checksums are checked; a damaged page elsewhere goes
// unnoticed until a restore or a verify. Bytes no file of the chain stores read as zero (a full
// snapshot leaves out zero pages). For a look at a few objects of a large snapshot (e.g. which
// reactor a file holds) at the cost of its run records, not of its size.
void read_snapshot_bytes(const std::filesystem::path& file, std::uintptr_t address, void* out, std::size_t size);

// The chain that `latest` closes: its full snapshot first, `latest` last. Checks that each
// increment's parent exists and is the snapshot it names (id, heap, zone), not the page data.
// Each parent's path is its child's directory, as `latest` spells it, joined with the parent's
// recorded name: "d/s.inc2" gives "d/s", "s.inc2" gives "s", and "e/s.inc2" with a parent in d
// gives "d/s" (not "e/../d/s") where that is the same file.
std::vector<std::filesystem::path> snapshot_chain(const std::filesystem::path& latest);

// One link of that chain: the parent the increment `child` was built on, as snapshot_chain()
// reaches and checks it, or nothing for a full snapshot. Throws kBrokenChain naming `child` when
// the parent is missing, unreadable or another snapshot, and what read_snapshot_header() throws
// when `child` itself cannot be read. For a caller that must go on past a broken link (a check
// of every readable file of a chain), where snapshot_chain() stops at the first.
std::optional<std::filesystem::path> snapshot_parent(const std::filesystem::path& child);

}  // namespace reheap
