// The byte-level pieces LogWriter and LogReader share: varints, fixed little-endian integers,
// the magic numbers and the header sizes (RECORDING_FORMAT.md describes each).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace reheap::detail::recording {

inline constexpr unsigned char kFileMagic[8] = {'R', 'H', 'E', 'A', 'P', 'L', 'O', 'G'};
inline constexpr std::uint32_t kBlockMagic = 0x4B4C4252;  // "RBLK" little-endian
// magic u32, events_before u64, records u32, body length u32, checksum u64.
inline constexpr std::size_t kBlockHeaderBytes = 4 + 8 + 4 + 4 + 8;
// A block body never exceeds this: anything longer is corruption, not a big block (a record
// holds at most one message, whose size is bounded far below).
inline constexpr std::size_t kMaxBlockBody = std::size_t{1} << 30;
static_assert(kBlockHeaderBytes == 28);
// The header's record count field (version 3 on): the count in its low 31 bits, and in bit 31 the
// mark of a block whose last event goes on in the next block (a long event's block handed over
// when full). A log that ends after such a block ends inside that event: its records are not all
// there, and a reader must not take it for a whole event.
inline constexpr std::uint32_t kBlockContinues = std::uint32_t{1} << 31;
inline constexpr std::uint32_t kBlockRecordsMask = kBlockContinues - 1;

// Send and write records: which of the payload's forms follow.
inline constexpr std::uint8_t kHasDigest = 1;
inline constexpr std::uint8_t kHasBytes = 2;

inline constexpr std::size_t kMaxVarintBytes = 10;

// Writes v's varint at `at`, which has room for kMaxVarintBytes; returns the bytes written. No
// allocation: the crash bundle's signal handler encodes with it too.
inline std::size_t store_varint(unsigned char* at, std::uint64_t v) noexcept {
  std::size_t n = 0;
  while (v >= 0x80) {
    at[n++] = static_cast<unsigned char>(v | 0x80);
    v >>= 7;
  }
  at[n++] = static_cast<unsigned char>(v);
  return n;
}

inline void put_varint(std::vector<unsigned char>& out, std::uint64_t v) {
  unsigned char bytes[kMaxVarintBytes];
  out.insert(out.end(), bytes, bytes + store_varint(bytes, v));
}

inline std::uint64_t zigzag(std::int64_t v) noexcept {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
inline std::int64_t unzigzag(std::uint64_t v) noexcept {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

template <class T>
void put_fixed(std::vector<unsigned char>& out, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

template <class T>
void store_fixed(unsigned char* at, T v) noexcept {
  for (std::size_t i = 0; i < sizeof(T); ++i) at[i] = static_cast<unsigned char>(v >> (8 * i));
}

template <class T>
T load_fixed(const unsigned char* at) noexcept {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v = static_cast<T>(v | (static_cast<T>(at[i]) << (8 * i)));
  return v;
}

inline void put_string(std::vector<unsigned char>& out, std::string_view s) {
  put_varint(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

// put_string at `at`, which has room for kMaxVarintBytes + s.size(); returns the bytes written.
inline std::size_t store_string(unsigned char* at, std::string_view s) noexcept {
  const std::size_t n = store_varint(at, s.size());
  if (!s.empty()) std::memcpy(at + n, s.data(), s.size());
  return n + s.size();
}

// A block's header: kBlockHeaderBytes at `at`.
inline void store_block_header(unsigned char* at, std::uint64_t events_before, std::uint32_t records,
                               std::uint32_t body_bytes, std::uint64_t checksum) noexcept {
  store_fixed<std::uint32_t>(at, kBlockMagic);
  store_fixed<std::uint64_t>(at + 4, events_before);
  store_fixed<std::uint32_t>(at + 12, records);
  store_fixed<std::uint32_t>(at + 16, body_bytes);
  store_fixed<std::uint64_t>(at + 20, checksum);
}

// XXH3-64 (seed 0), the checksum the snapshot format uses too.
std::uint64_t checksum64(const void* data, std::size_t size) noexcept;

}  // namespace reheap::detail::recording
