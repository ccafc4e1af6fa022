// The snapshot file format's fixed parts and its header codec (heap/SNAPSHOT_FORMAT.md is the
// specification; this file is its only implementation). Everything here is pure: bytes in,
// values out, SnapshotError on anything malformed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "reheap/snapshot_file.h"

namespace reheap::detail::snapshot {

inline constexpr char kMagic[8] = {'R', 'E', 'H', 'E', 'A', 'P', 'S', 'N'};
inline constexpr char kEndMagic[8] = {'R', 'E', 'H', 'E', 'A', 'P', 'N', 'D'};
// 2: class lanes past a class's first lie in one range (heap/src/layout.h); version 1 files hold
// the earlier layout, a lane per 2 MiB, which this build cannot read.
inline constexpr std::uint32_t kFormatVersion = 2;
inline constexpr std::size_t kPreambleSize = 16;
inline constexpr std::uint32_t kMaxHeaderSize = 16u << 20;
inline constexpr std::size_t kRunRecordSize = 16;
inline constexpr std::size_t kChecksumSize = 8;
inline constexpr std::size_t kTrailerSize = 32;
inline constexpr std::uint32_t kZeroRunFlag = 1;

// Little-endian fields (x86-64 only, see the static_assert in format.cpp).
inline void put_u32(unsigned char* p, std::uint32_t v) noexcept { std::memcpy(p, &v, 4); }
inline void put_u64(unsigned char* p, std::uint64_t v) noexcept { std::memcpy(p, &v, 8); }
inline std::uint32_t get_u32(const unsigned char* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline std::uint64_t get_u64(const unsigned char* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

struct RunRecord {
  std::uint64_t address = 0;
  std::uint32_t pages = 0;
  std::uint32_t flags = 0;
};

inline void encode_run(const RunRecord& r, unsigned char out[kRunRecordSize]) noexcept {
  put_u64(out, r.address);
  put_u32(out + 8, r.pages);
  put_u32(out + 12, r.flags);
}
inline RunRecord decode_run(const unsigned char in[kRunRecordSize]) noexcept {
  return RunRecord{get_u64(in), get_u32(in + 8), get_u32(in + 12)};
}

// The msgpack header, without preamble or checksum.
std::vector<unsigned char> encode_header(const SnapshotHeader& header);

// Parses and checks a header (types, sizes, chunk order, zone geometry). `name` prefixes
// messages. Throws SnapshotError(kCorrupt) on anything malformed.
SnapshotHeader decode_header(const unsigned char* data, std::size_t size, std::uint32_t version,
                             const std::string& name);

// A new snapshot id: random, never 0.
std::uint64_t new_snapshot_id() noexcept;
// Wall-clock time for `created_unix_ns`.
std::uint64_t unix_time_ns() noexcept;

// XXH3-64, seed 0.
std::uint64_t checksum(const void* data, std::size_t size) noexcept;

// Incremental XXH3-64 over a sequence of byte strings (the trailer's digest).
class Digest {
 public:
  Digest();
  ~Digest();
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;
  void reset() noexcept;
  void update(const void* data, std::size_t size) noexcept;
  std::uint64_t value() const noexcept;

 private:
  void* state_;  // XXH3_state_t, kept out of this header
};

[[noreturn]] void fail(SnapshotErrc code, const std::string& name, const std::string& what);

}  // namespace reheap::detail::snapshot
