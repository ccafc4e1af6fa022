// Writing a snapshot: planning which runs to write from the heap's page ranges, and emitting
// them in the file format (preamble, header, runs with checksums, end record, trailer).
//
// Planning reads each candidate page once to see whether it is all zero; a page holding data
// is told apart by its first non-zero word, so the check costs almost nothing for full pages and
// one page read for zero ones. Writing then hashes and writes each run in 1 MiB pieces, so that a
// piece is hashed while it is in the cache and goes straight from the heap to the kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../os/write_tracker.h"
#include "format.h"
#include "reheap/byte_stream.h"
#include "reheap/snapshot_file.h"

namespace reheap::detail::snapshot {

// Pages to consider for a file, with what an all-zero page among them means.
struct Segment {
  os::PageRange range;
  // true: the page changed since the parent, so a zero page is written as a zero run;
  // false: the page was zero in the parent (or this is a full snapshot), so it is a hole.
  bool zero_is_change = false;
  ChunkUse use = ChunkUse::kClass;
  std::uintptr_t run_base = 0;  // first chunk of the chunk run holding the range
};

struct PlannedRun {
  std::uintptr_t address;
  std::uint32_t pages;
  bool zero;
};

struct Plan {
  std::vector<PlannedRun> runs;
  PageCounts counts;
  std::uint64_t data_pages = 0;
  std::uint64_t holes = 0;  // zero pages left out
};

// Counts one data page in `counts` by what it holds: `run_base` is the first chunk of the chunk
// run holding `page` (a huge run's first page is its header).
void count_page(PageCounts& counts, ChunkUse use, std::uintptr_t run_base, std::uintptr_t page) noexcept;

// Sorts and merges `segments` (overlaps take zero_is_change), reads their pages and returns the
// runs, split at chunk boundaries.
Plan plan_runs(std::vector<Segment> segments);

class SnapshotWriter {
 public:
  // Writes the preamble, the header and its checksum.
  SnapshotWriter(ByteSink& sink, const SnapshotHeader& header);
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;

  void data_run(std::uintptr_t address, std::uint32_t pages, const void* data);
  void zero_run(std::uintptr_t address, std::uint32_t pages);

  // A data run whose bytes come in pieces (compaction reads them from other files).
  void begin_run(std::uintptr_t address, std::uint32_t pages);
  void append(const void* data, std::size_t size);
  void end_run();

  // The end record and the trailer. Returns the bytes written in all.
  std::uint64_t finish();

 private:
  ByteSink& sink_;
  Digest digest_;
  Digest run_hash_;  // reset per run: XXH3 state reused
  unsigned char record_[kRunRecordSize];
  std::uint64_t run_bytes_left_ = 0;
  std::uint64_t runs_ = 0;
  std::uint64_t data_pages_ = 0;
  std::uint64_t bytes_ = 0;
  bool in_run_ = false;
};

}  // namespace reheap::detail::snapshot
