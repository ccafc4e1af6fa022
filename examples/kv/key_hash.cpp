// shard_of: see key_hash.h for the contract (stability, hash tags, range reduction).
#include "key_hash.h"

namespace kv {

std::uint32_t shard_of(std::string_view key, std::uint32_t shard_count) {
  if (shard_count <= 1) return 0;
  std::string_view hashed = key;
  const std::size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const std::size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      hashed = key.substr(open + 1, close - open - 1);
    }
  }
  const std::uint64_t high = hash_key(hashed) >> 32;
  return static_cast<std::uint32_t>((high * shard_count) >> 32);
}

}  // namespace kv
