// Test support: runs commands against a Keyspace given as lists of words, and returns the reply
// bytes, so a test reads as "this command gets this reply".
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "keyspace.h"

namespace kv::testing {

inline constexpr std::int64_t kStartMs = 1'700'000'000'000;  // a fixed "now"

inline std::string run(Keyspace& keyspace, std::initializer_list<std::string_view> args,
                       std::int64_t now_ms = kStartMs) {
  const std::vector<std::string_view> words(args);
  std::string out;
  keyspace.execute(words, now_ms, out);
  return out;
}

inline std::string run(Keyspace& keyspace, const std::vector<std::string>& args,
                       std::int64_t now_ms = kStartMs) {
  const std::vector<std::string_view> words(args.begin(), args.end());
  std::string out;
  keyspace.execute(words, now_ms, out);
  return out;
}

}  // namespace kv::testing
