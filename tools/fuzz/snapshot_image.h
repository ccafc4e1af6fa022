// SnapshotImage: the bytes of one snapshot file with their structure located, for tools that edit
// snapshots on purpose (the fuzzer's mutator, the hostile-input generator).
//
// The file format is heap/SNAPSHOT_FORMAT.md: a 16-byte preamble, a msgpack header, the header's
// checksum, runs (16-byte record, data, 8-byte checksum), an end record and a trailer. An image is
// parsed leniently: it stops where the structure stops making sense and keeps what it found,
// because the inputs it sees are mutants. Nothing here throws or allocates per byte.
//
// The header's fields the editors need (geometry, chunk list) come from header_fields.h; this
// file only knows where things are, and reseal() makes every checksum agree with the bytes again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace reheap_fuzz {

inline constexpr std::size_t kPreambleSize = 16;
inline constexpr std::size_t kRunRecordSize = 16;
inline constexpr std::size_t kChecksumSize = 8;
inline constexpr std::size_t kEndRecordSize = 24;
inline constexpr std::size_t kTrailerSize = 32;
inline constexpr std::uint32_t kZeroRunFlag = 1;
// A header longer than this is implausible for a mutant; the reader's own limit is 16 MiB.
inline constexpr std::size_t kMaxHeaderLength = std::size_t{1} << 24;

struct ImageRun {
  std::size_t record = 0;  // file offset of the 16-byte run record
  std::uint64_t address = 0;
  std::uint32_t pages = 0;
  std::uint32_t flags = 0;
  std::size_t data = 0;    // file offset of the data (zero runs: where it would be, no bytes)
  bool zero() const noexcept { return (flags & kZeroRunFlag) != 0; }
};

class SnapshotImage {
 public:
  // Locates the parts of `data`. `page_size` is the header's (4096 for every valid file); the
  // runs' lengths depend on it, so it is a parameter rather than guessed.
  SnapshotImage(const std::uint8_t* data, std::size_t size, std::uint64_t page_size);

  bool has_preamble() const noexcept { return header_length_ != kNoHeader; }
  std::size_t header_offset() const noexcept { return kPreambleSize; }
  std::size_t header_length() const noexcept { return header_length_; }
  const std::vector<ImageRun>& runs() const noexcept { return runs_; }
  std::uint64_t page_size() const noexcept { return page_size_; }
  // Offset of the first byte after the runs (the end record), or 0 if the runs did not end well.
  std::size_t end_record() const noexcept { return end_record_; }

  // The file offset of the `width` bytes at `address`, if a data run holds all of them; else
  // SIZE_MAX. Zero runs hold no bytes.
  std::size_t offset_of(std::uint64_t address, std::size_t width) const noexcept;
  // The run whose pages include `address` (data or zero), or null.
  const ImageRun* run_at(std::uint64_t address) const noexcept;

 private:
  static constexpr std::size_t kNoHeader = ~std::size_t{0};
  std::uint64_t page_size_;
  std::size_t header_length_ = kNoHeader;
  std::size_t end_record_ = 0;
  std::vector<ImageRun> runs_;
};

// Recomputes every checksum of `data` (header checksum, each run's checksum, the trailer's run
// and page counts and digest), so that a deliberately edited file gets past them and the edit
// reaches the code behind. Stops where the structure stops making sense.
void reseal(std::uint8_t* data, std::size_t size, std::uint64_t page_size);

// Inserts a data run of `pages` zero pages at `address` into `file`, in address order, and
// returns false (leaving `file` as it was) if a run already covers any of those pages or the
// file's runs cannot be located. The caller reseals. This is how an editor reaches a page that
// the writer left out because it was all zero (a hole), such as a page-table page.
bool insert_zero_data_run(std::vector<std::uint8_t>& file, std::uint64_t page_size,
                          std::uint64_t address, std::uint32_t pages);

std::uint64_t load_le(const std::uint8_t* p, std::size_t width) noexcept;
void store_le(std::uint8_t* p, std::size_t width, std::uint64_t value) noexcept;

}  // namespace reheap_fuzz
