// Key hash: the one hash function of the kv server, used twice - to pick a key's shard
// (shard_of) and to place a key in a shard's tables (KeyHash).
//
// It must be stable: snapshots are restored by shard index and a shard's tables are restored at
// the same addresses, possibly into another build, so the hash of a key may depend on nothing but
// its bytes - no per-process seed, no std::hash (whose algorithm belongs to the standard library
// version). It reads the key eight bytes at a time in little-endian order (the byte order of every
// machine we run on) and mixes with 64-bit multiplications; the constants below are part of the
// on-disk format of snapshots and must never change.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace kv {

namespace detail {
inline constexpr std::uint64_t kHashSeed = 0x9e3779b97f4a7c15ULL;
inline constexpr std::uint64_t kHashMultiplier = 0xff51afd7ed558ccdULL;
inline constexpr std::uint64_t kHashFinalMultiplier = 0xc4ceb9fe1a85ec53ULL;

inline std::uint64_t load_le64(const char* p) {
  std::uint64_t word;
  std::memcpy(&word, p, sizeof(word));
  return word;  // little-endian hosts only: see the paragraph above
}

inline std::uint64_t mix(std::uint64_t h) {
  h ^= h >> 33;
  h *= kHashMultiplier;
  h ^= h >> 33;
  h *= kHashFinalMultiplier;
  h ^= h >> 33;
  return h;
}
}  // namespace detail

// The 64-bit hash of `bytes`.
inline std::uint64_t hash_key(std::string_view bytes) {
  const char* p = bytes.data();
  std::size_t n = bytes.size();
  std::uint64_t h = detail::kHashSeed ^ (n * detail::kHashMultiplier);
  while (n >= 8) {
    h = (h ^ detail::mix(detail::load_le64(p))) * detail::kHashFinalMultiplier;
    h = (h << 27) | (h >> 37);
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    std::uint64_t tail = 0;
    std::memcpy(&tail, p, n);
    h = (h ^ detail::mix(tail ^ (std::uint64_t{n} << 59))) * detail::kHashFinalMultiplier;
  }
  return detail::mix(h);
}

// The shard that owns `key`, in [0, shard_count); shard_count must be at least 1.
//
// Hash tags, as in Redis Cluster: if the key contains a '{' followed later by a '}' with at least
// one byte between them, only the bytes between the first '{' and the first '}' after it are
// hashed, so "{user1}.name" and "{user1}.mail" share a shard (which RENAME and MSETNX require).
// The shard is the high 32 bits of hash_key() scaled to shard_count (multiply and shift), which
// keeps every shard's share of keys within rounding of 1/shard_count.
std::uint32_t shard_of(std::string_view key, std::uint32_t shard_count);

// Hash and equality for the shards' tables. Both are transparent, so a table of std::string can
// be searched with a std::string_view without building a string.
struct KeyHash {
  using is_transparent = void;
  // Deliberately not noexcept: libstdc++ then caches each node's hash, which makes a bucket walk
  // compare cached hashes instead of rehashing every key it passes.
  std::size_t operator()(std::string_view key) const { return hash_key(key); }
};

struct KeyEqual {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const noexcept { return a == b; }
};

}  // namespace kv
