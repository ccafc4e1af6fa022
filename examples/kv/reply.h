// Reply: the RESP2 encoders. Every reply a shard or the connection side produces is built by
// appending to a std::string with these functions, so the wire format lives in one place.
//
// RESP2 values: "+OK\r\n" simple string, "-ERR ...\r\n" error, ":42\r\n" integer,
// "$3\r\nfoo\r\n" bulk string, "$-1\r\n" null bulk, "*2\r\n..." array header followed by its
// elements, "*-1\r\n" null array. A simple string or error must not contain CR or LF; the callers
// only pass literal texts or texts they built without them.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace kv {

inline void append_simple(std::string& out, std::string_view text) {
  out += '+';
  out += text;
  out += "\r\n";
}

inline void append_ok(std::string& out) { out += "+OK\r\n"; }

// `text` is the whole message after the dash, e.g. "ERR syntax error" or "WRONGTYPE ...".
inline void append_error(std::string& out, std::string_view text) {
  out += '-';
  out += text;
  out += "\r\n";
}

namespace detail {
inline void append_prefixed_number(std::string& out, char prefix, std::int64_t value) {
  char buffer[24];
  buffer[0] = prefix;
  auto [end, ec] = std::to_chars(buffer + 1, buffer + sizeof(buffer) - 2, value);
  (void)ec;  // 20 characters always suffice for an int64.
  *end++ = '\r';
  *end++ = '\n';
  out.append(buffer, static_cast<std::size_t>(end - buffer));
}
}  // namespace detail

inline void append_integer(std::string& out, std::int64_t value) {
  detail::append_prefixed_number(out, ':', value);
}

inline void append_bulk(std::string& out, std::string_view value) {
  detail::append_prefixed_number(out, '$', static_cast<std::int64_t>(value.size()));
  out += value;
  out += "\r\n";
}

inline void append_null_bulk(std::string& out) { out += "$-1\r\n"; }

inline void append_array_header(std::string& out, std::size_t count) {
  detail::append_prefixed_number(out, '*', static_cast<std::int64_t>(count));
}

inline void append_null_array(std::string& out) { out += "*-1\r\n"; }

// The error texts shared by several command families, spelled exactly as Redis 7 spells them.
inline constexpr std::string_view kWrongTypeError =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
inline constexpr std::string_view kNotIntegerError = "ERR value is not an integer or out of range";
inline constexpr std::string_view kNotFloatError = "ERR value is not a valid float";
inline constexpr std::string_view kSyntaxError = "ERR syntax error";
inline constexpr std::string_view kOverflowError = "ERR increment or decrement would overflow";
inline constexpr std::string_view kNoSuchKeyError = "ERR no such key";
inline constexpr std::string_view kMustBePositiveError =
    "ERR value is out of range, must be positive";
inline constexpr std::string_view kIndexOutOfRangeError = "ERR index out of range";

inline void append_wrong_arity(std::string& out, std::string_view command_name) {
  out += "-ERR wrong number of arguments for '";
  out += command_name;
  out += "' command\r\n";
}

}  // namespace kv
