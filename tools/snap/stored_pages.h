// The pages a full snapshot stores, readable by heap address: an index of its data runs
// (address, end, file offset), built while the file is read and its checksums checked, and a
// file descriptor to read bytes back with pread().
//
// A full snapshot stores each non-zero page once and leaves out the rest, so a byte at an address
// no run covers reads as zero: that is the heap's state, not a gap in knowledge. `diff` uses this
// to read the allocator's metadata pages (chunk headers, page tables) when it attributes changed
// bytes to blocks, and to re-read the few bytes of a span it reports; sequential page access
// during the comparison itself goes through page_diff.cpp's read-ahead window instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

namespace reheap::snap {

// Where a run of pages lies in a snapshot file.
struct IndexedRun {
  std::uintptr_t address = 0;
  std::uintptr_t end = 0;
  std::uint64_t offset = 0;
};

class StoredPages {
 public:
  // `runs`: the file's data runs, ascending by address (as a full snapshot stores them).
  StoredPages(const std::filesystem::path& file, std::vector<IndexedRun> runs);
  ~StoredPages();
  StoredPages(const StoredPages&) = delete;
  StoredPages& operator=(const StoredPages&) = delete;

  // Copies the heap's bytes [address, address + size) to `out`: zero where no run is stored.
  // Throws SnapshotError (kIo, kTruncated) if the file cannot be read back.
  void read(std::uintptr_t address, void* out, std::size_t size) const;

 private:
  std::filesystem::path file_;
  std::vector<IndexedRun> runs_;
  int fd_;
};

}  // namespace reheap::snap
