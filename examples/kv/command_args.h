// Command arguments: the strict parsers and formatters shared by the command families, with
// Redis's rules - an integer is an optional '-' then digits with no leading zero, spaces or '+';
// a float is what strtod reads in full, including "inf", but never "nan".
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "reply.h"

namespace kv::detail {

inline bool parse_int64(std::string_view text, std::int64_t& value) {
  if (text.empty() || text.size() > 20) return false;
  const std::size_t digits_start = text[0] == '-' ? 1 : 0;
  if (digits_start == text.size()) return false;
  // "0" is the only number that may start with 0; "-0" and "007" are not integers to Redis.
  if (text[digits_start] == '0' && (text.size() > 1)) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

inline bool parse_double(std::string_view text, double& value) {
  if (text.empty() || text.size() > 64) return false;
  if (text[0] == '+') text.remove_prefix(1);  // from_chars does not take a '+', strtod does
  if (text.empty() || text[0] == '+') return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return false;
  return !std::isnan(value);
}

// The shortest text that reads back as `value`; "inf" and "-inf" for the infinities.
inline void append_double_text(std::string& out, double value) {
  char buffer[32];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  (void)ec;  // 32 bytes hold any double's shortest form
  out.append(buffer, static_cast<std::size_t>(end - buffer));
}

inline bool equals_ignoring_case(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

// The optional COUNT of LPOP/RPOP/SPOP/ZPOPMIN/ZPOPMAX at args[index]: 1 when absent, else a
// non-negative integer. A bad one gets its error appended to `out` and false.
inline bool parse_pop_count(std::span<const std::string_view> args, std::size_t index, std::string& out,
                            std::int64_t& count) {
  count = 1;
  if (args.size() <= index) return true;
  if (!parse_int64(args[index], count)) {
    append_error(out, kNotIntegerError);
    return false;
  }
  if (count < 0) {
    append_error(out, kMustBePositiveError);
    return false;
  }
  return true;
}

// The START STOP index pair of LRANGE/LTRIM/ZRANGE at args[index] and args[index + 1]. A bad one
// gets its error appended to `out` and false.
inline bool parse_index_pair(std::span<const std::string_view> args, std::size_t index, std::string& out,
                             std::int64_t& start, std::int64_t& stop) {
  if (parse_int64(args[index], start) && parse_int64(args[index + 1], stop)) return true;
  append_error(out, kNotIntegerError);
  return false;
}

// Resolves Redis's inclusive [start, stop] index pair, negative counting from the end, against a
// sequence of `size` elements. False if the range is empty.
inline bool resolve_range(std::int64_t start, std::int64_t stop, std::size_t size,
                          std::size_t& first, std::size_t& last) {
  const auto n = static_cast<std::int64_t>(size);
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  if (start < 0) start = 0;
  if (start > stop || start >= n) return false;
  if (stop >= n) stop = n - 1;
  first = static_cast<std::size_t>(start);
  last = static_cast<std::size_t>(stop);
  return true;
}

}  // namespace kv::detail
