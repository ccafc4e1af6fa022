// An independent reading of heap/SNAPSHOT_FORMAT.md, written from the document: a snapshot file
// decoded into its parts and encoded back, so that tests can cut a file at a chosen boundary, or
// edit it and recompute every checksum (a file whose checksums are right but whose structure is
// wrong must still be refused). Each run is a 16-byte record (address, pages, flags), its data,
// and the data's checksum; the trailer digest covers the header checksum, every run's record and
// checksum, and the end record.
#pragma once

#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace reheap::snaptest {

using Bytes = std::vector<unsigned char>;

inline constexpr std::size_t kPreambleBytes = 16;
inline constexpr std::size_t kRunBytes = 24;  // address, pages, flags + checksum
inline constexpr std::size_t kTrailerBytes = 32;

inline std::uint64_t load_le(const Bytes& b, std::size_t at, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i) v |= std::uint64_t{b.at(at + i)} << (8 * i);
  return v;
}

inline void store_le(Bytes& b, std::size_t at, std::size_t width, std::uint64_t v) {
  for (std::size_t i = 0; i < width; ++i) b.at(at + i) = static_cast<unsigned char>(v >> (8 * i));
}

inline void append_le(Bytes& b, std::size_t width, std::uint64_t v) {
  b.resize(b.size() + width);
  store_le(b, b.size() - width, width, v);
}

inline std::uint64_t xxh3(const unsigned char* p, std::size_t n) { return XXH3_64bits(p, n); }

struct FileRun {
  std::uint64_t address = 0;
  std::uint32_t pages = 0;
  std::uint32_t flags = 0;
  std::uint64_t checksum = 0;
  Bytes data;                    // empty for a zero run
  std::size_t at = 0;            // where the run starts in the decoded file
  std::size_t data_at = 0;       // where its data starts
  std::size_t checksum_at = 0;   // where its checksum lies
};

struct SnapshotFile {
  std::string error;  // "" if the bytes decoded
  Bytes head;  // preamble, header and header checksum
  std::size_t header_length = 0;
  std::vector<FileRun> runs;
  std::size_t end_record_at = 0;
  std::size_t trailer_at = 0;
  std::uint64_t trailer_runs = 0, trailer_pages = 0, trailer_digest = 0;
};

inline std::uint64_t digest_of_runs(const SnapshotFile& f) {
  Bytes in(f.head.end() - 8, f.head.end());
  for (const FileRun& r : f.runs) {
    append_le(in, 8, r.address);
    append_le(in, 4, r.pages);
    append_le(in, 4, r.flags);
    append_le(in, 8, r.checksum);
  }
  in.resize(in.size() + kRunBytes, 0);  // the end record
  return xxh3(in.data(), in.size());
}

// Decodes a file that follows the document, checking every data checksum (not the digest).
inline SnapshotFile decode(const Bytes& b, std::size_t page_size) {
  SnapshotFile f;
  if (b.size() < kPreambleBytes) {
    f.error = "shorter than the preamble";
    return f;
  }
  f.header_length = load_le(b, 12, 4);
  std::size_t at = kPreambleBytes + f.header_length + 8;
  if (at > b.size()) {
    f.error = "shorter than the header";
    return f;
  }
  f.head.assign(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(at));
  for (;;) {
    if (at + kRunBytes > b.size()) {
      f.error = "no end record";
      return f;
    }
    FileRun r;
    r.at = at;
    r.address = load_le(b, at, 8);
    r.pages = static_cast<std::uint32_t>(load_le(b, at + 8, 4));
    r.flags = static_cast<std::uint32_t>(load_le(b, at + 12, 4));
    if (r.pages == 0) break;
    const std::size_t n = (r.flags & 1) != 0 ? 0 : std::size_t{r.pages} * page_size;
    r.data_at = at + 16;
    r.checksum_at = r.data_at + n;
    if (at + kRunBytes + n > b.size()) {
      f.error = "a run goes past the end";
      return f;
    }
    r.checksum = load_le(b, r.checksum_at, 8);
    r.data.assign(b.begin() + static_cast<std::ptrdiff_t>(r.data_at),
                  b.begin() + static_cast<std::ptrdiff_t>(r.data_at + n));
    if (n > 0 && r.checksum != xxh3(r.data.data(), n)) {
      f.error = "a data checksum does not match";
      return f;
    }
    at += kRunBytes + n;
    f.runs.push_back(std::move(r));
  }
  f.end_record_at = at;
  f.trailer_at = at + kRunBytes;
  if (f.trailer_at + kTrailerBytes != b.size()) {
    f.error = "the trailer does not end the file";
    return f;
  }
  f.trailer_runs = load_le(b, f.trailer_at, 8);
  f.trailer_pages = load_le(b, f.trailer_at + 8, 8);
  f.trailer_digest = load_le(b, f.trailer_at + 16, 8);
  return f;
}

// Encodes `f`, recomputing the trailer's counts and digest; data checksums are
// recomputed too unless `keep_checksums`.
inline Bytes encode(SnapshotFile f, bool keep_checksums = false) {
  Bytes out = f.head;
  std::uint64_t pages = 0;
  for (FileRun& r : f.runs) {
    if (!keep_checksums) r.checksum = r.data.empty() ? 0 : xxh3(r.data.data(), r.data.size());
    append_le(out, 8, r.address);
    append_le(out, 4, r.pages);
    append_le(out, 4, r.flags);
    out.insert(out.end(), r.data.begin(), r.data.end());
    append_le(out, 8, r.checksum);
    pages += r.data.empty() ? 0 : r.pages;
  }
  out.resize(out.size() + kRunBytes, 0);
  append_le(out, 8, f.runs.size());
  append_le(out, 8, pages);
  append_le(out, 8, digest_of_runs(f));
  const char* magic = "REHEAPND";
  out.insert(out.end(), magic, magic + 8);
  return out;
}

}  // namespace reheap::snaptest
