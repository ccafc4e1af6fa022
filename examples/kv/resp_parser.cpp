// RequestParser (resp_parser.h): the multibulk fast path first, then the slow paths - empty
// commands, inline lines, quote handling - and the error messages.
#include "resp_parser.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>
#include <limits>

namespace kv {
namespace {

constexpr std::string_view kInvalidMultibulkLength = "Protocol error: invalid multibulk length";
constexpr std::string_view kInvalidBulkLength = "Protocol error: invalid bulk length";
constexpr std::string_view kBulkNotTerminated = "Protocol error: bulk string not followed by CRLF";
constexpr std::string_view kTooBigInline = "Protocol error: too big inline request";
constexpr std::string_view kUnbalancedQuotes = "Protocol error: unbalanced quotes in request";

// The smallest element of a multibulk, "$0\r\n\r\n": what `need` assumes of elements not yet seen.
constexpr std::size_t kMinElementBytes = 6;
constexpr std::size_t kSizeMax = std::numeric_limits<std::size_t>::max();

// "Protocol error: expected '$', got 'X'" for every byte X, built at compile time so that the
// message is a static string like the others. A byte outside printable ASCII is written \xHH:
// a raw '\r' or '\n' would break the error reply's framing.
struct ExpectedDollarMessages {
  static constexpr std::string_view kHead = "Protocol error: expected '$', got '";
  static constexpr std::size_t kCapacity = 48;
  static_assert(kHead.size() + 4 + 1 <= kCapacity);

  std::array<std::array<char, kCapacity>, 256> text{};
  std::array<std::uint8_t, 256> length{};

  constexpr ExpectedDollarMessages() {
    constexpr char kHex[] = "0123456789abcdef";
    for (std::size_t byte = 0; byte < 256; ++byte) {
      auto& out = text[byte];
      std::size_t n = 0;
      for (char c : kHead) out[n++] = c;
      if (byte >= 0x20 && byte < 0x7f) {
        out[n++] = static_cast<char>(byte);
      } else {
        out[n++] = '\\';
        out[n++] = 'x';
        out[n++] = kHex[byte >> 4];
        out[n++] = kHex[byte & 15];
      }
      out[n++] = '\'';
      length[byte] = static_cast<std::uint8_t>(n);
    }
  }
  constexpr std::string_view operator[](char c) const {
    const auto byte = static_cast<unsigned char>(c);
    return {text[byte].data(), length[byte]};
  }
};
constexpr ExpectedDollarMessages kExpectedDollar;

constexpr std::size_t saturating_add(std::size_t a, std::size_t b) {
  return b > kSizeMax - a ? kSizeMax : a + b;
}
constexpr std::size_t min_bytes_of_elements(std::size_t elements) {
  return elements > kSizeMax / kMinElementBytes ? kSizeMax : elements * kMinElementBytes;
}

ParseResult need_more(std::size_t consumed, std::size_t need, std::size_t in_size) {
  return {ParseStatus::kNeedMore, consumed, need > in_size ? need : 0, {}};
}
ParseResult error(std::string_view message) { return {ParseStatus::kError, 0, 0, message}; }

// A "<length>\r\n" line as it follows '*' or '$'.
struct LengthLine {
  enum class State : std::uint8_t { kComplete, kIncomplete, kInvalid };
  State state = State::kInvalid;
  bool minus_one = false;  // the line was "-1" (only when allowed)
  std::size_t value = 0;
  std::size_t end = 0;  // the position after the '\n'
};

// Reads a strict decimal at in[pos] up to "\r\n": no sign but an allowed "-1", no leading zeros,
// nothing above `max`. A byte that no valid line could have is kInvalid at once, before the line
// is complete, so a header line can never grow past 22 bytes and the outcome never depends on how
// the bytes were split. Overflow is impossible: a digit is refused before the value passes `max`.
[[gnu::always_inline]] inline LengthLine read_length_line(std::string_view in, std::size_t pos,
                                                         std::size_t max, bool allow_minus_one) {
  using State = LengthLine::State;
  LengthLine line;
  const std::size_t size = in.size();
  if (pos == size) [[unlikely]] return {State::kIncomplete};
  if (in[pos] == '-') [[unlikely]] {
    if (!allow_minus_one) return line;
    constexpr std::string_view kMinusOne = "-1\r\n";
    const std::size_t have = std::min(size - pos, kMinusOne.size());
    if (in.substr(pos, have) != kMinusOne.substr(0, have)) return line;
    if (have < kMinusOne.size()) return {State::kIncomplete};
    return {State::kComplete, true, 0, pos + kMinusOne.size()};
  }
  const std::size_t first = pos;
  std::size_t value = 0;
  for (; pos < size; ++pos) {
    const unsigned digit = static_cast<unsigned char>(in[pos]) - unsigned{'0'};
    if (digit > 9) break;
    if (pos > first && value == 0) return line;  // a leading zero
    if (digit > max || value > (max - digit) / 10) return line;  // value * 10 + digit > max
    value = value * 10 + digit;
  }
  if (pos == size) return {State::kIncomplete};
  if (pos == first || in[pos] != '\r') return line;
  if (pos + 1 == size) return {State::kIncomplete};
  if (in[pos + 1] != '\n') return line;
  return {State::kComplete, false, value, pos + 2};
}

[[gnu::always_inline]] inline bool is_inline_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Copies the quoted section that opens at line[i] (a '"' or '\'') into `out`, unescaped, and
// returns the position after its closing quote, or npos if the quote is not closed or the closing
// quote is followed by something other than a blank or the end of the line.
std::size_t unquote(std::string_view line, std::size_t i, std::string& out) {
  const char quote = line[i++];
  while (i < line.size()) {
    const char c = line[i];
    if (c == quote) {
      ++i;
      const bool ends_token = i == line.size() || is_inline_blank(line[i]);
      return ends_token ? i : std::string_view::npos;
    }
    if (c != '\\') {
      out.push_back(c);
      ++i;
      continue;
    }
    if (i + 1 == line.size()) break;  // a backslash cannot escape the end of the line
    const char escaped = line[i + 1];
    if (quote == '\'') {
      // In single quotes only \' is an escape; any other backslash is itself.
      out.push_back(escaped == '\'' ? '\'' : '\\');
      i += escaped == '\'' ? 2 : 1;
      continue;
    }
    if (escaped == 'x' && i + 3 < line.size() && hex_value(line[i + 2]) >= 0 &&
        hex_value(line[i + 3]) >= 0) {
      out.push_back(static_cast<char>(hex_value(line[i + 2]) * 16 + hex_value(line[i + 3])));
      i += 4;
      continue;
    }
    switch (escaped) {
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'b': out.push_back('\b'); break;
      case 'a': out.push_back('\a'); break;
      default: out.push_back(escaped); break;  // \" \\ and any other: the byte itself
    }
    i += 2;
  }
  return std::string_view::npos;
}

}  // namespace

RequestParser::RequestParser(ParseLimits limits) : limits_(limits) {}

// The fast path: a multibulk command at the start of `in`. Everything else - inline commands,
// empty commands, an empty buffer - goes to parse_after_empty_commands(), which starts over.
ParseResult RequestParser::parse(std::string_view in, std::vector<std::string_view>& args) {
  args.clear();
  if (in.empty() || in.front() != '*') [[unlikely]] return parse_after_empty_commands(in, args);
  ParseResult result = parse_multibulk(in, 0, args);
  if (result.status != ParseStatus::kCommand) [[unlikely]] {
    args.clear();
    return result;
  }
  if (args.empty()) [[unlikely]] return parse_after_empty_commands(in, args);  // *0 or *-1
  return result;
}

// One multibulk command at in[start], which is '*'. An empty one (*0, *-1) is a kCommand with no
// arguments, for the caller to skip. On kNeedMore and kError `args` may hold a partial command.
[[gnu::always_inline]] inline ParseResult RequestParser::parse_multibulk(
    std::string_view in, std::size_t start, std::vector<std::string_view>& args) const {
  using State = LengthLine::State;
  const LengthLine count = read_length_line(in, start + 1, limits_.max_args, true);
  if (count.state != State::kComplete) [[unlikely]] {
    return count.state == State::kInvalid ? error(kInvalidMultibulkLength)
                                          : need_more(start, 0, in.size());
  }
  std::size_t pos = count.end;
  // A large count costs nothing until its elements are here: reserve only what `in` can hold.
  args.reserve(std::min(count.value, (in.size() - pos) / kMinElementBytes + 1));
  for (std::size_t left = count.value; left > 0; --left) {
    if (pos == in.size()) [[unlikely]] {
      return need_more(start, saturating_add(pos, min_bytes_of_elements(left)), in.size());
    }
    if (in[pos] != '$') [[unlikely]] return error(kExpectedDollar[in[pos]]);
    const LengthLine bulk = read_length_line(in, pos + 1, limits_.max_bulk, false);
    if (bulk.state != State::kComplete) [[unlikely]] {
      if (bulk.state == State::kInvalid) return error(kInvalidBulkLength);
      return need_more(start, saturating_add(pos, min_bytes_of_elements(left)), in.size());
    }
    const std::size_t available = in.size() - bulk.end;
    if (bulk.value >= available || available - bulk.value < 2) [[unlikely]] {
      const std::size_t bulk_end = saturating_add(saturating_add(bulk.end, bulk.value), 2);
      return need_more(start, saturating_add(bulk_end, min_bytes_of_elements(left - 1)),
                       in.size());
    }
    const std::size_t payload_end = bulk.end + bulk.value;
    if (in[payload_end] != '\r' || in[payload_end + 1] != '\n') [[unlikely]] {
      return error(kBulkNotTerminated);
    }
    args.push_back(in.substr(bulk.end, bulk.value));
    pos = payload_end + 2;
  }
  return {ParseStatus::kCommand, pos, 0, {}};
}

// The slow path: steps past empty commands (each at least one byte, so this ends) and parses the
// first real one, in either form.
[[gnu::noinline, gnu::cold]] ParseResult RequestParser::parse_after_empty_commands(
    std::string_view in, std::vector<std::string_view>& args) {
  std::size_t start = 0;
  for (;;) {
    if (start == in.size()) return need_more(start, 0, in.size());
    ParseResult result = in[start] == '*' ? parse_multibulk(in, start, args)
                                          : parse_inline(in, start, args);
    if (result.status != ParseStatus::kCommand) {
      args.clear();
      return result;
    }
    if (!args.empty()) return result;
    start = result.consumed;
  }
}

// One inline line at in[start]. A line of blanks only is a kCommand with no arguments.
ParseResult RequestParser::parse_inline(std::string_view in, std::size_t start,
                                        std::vector<std::string_view>& args) {
  const std::string_view rest = in.substr(start);
  // Look no further than one byte past the limit: that is enough to tell a line that is too long.
  const std::size_t window = std::min(rest.size(), saturating_add(limits_.max_inline, 1));
  const void* newline = std::memchr(rest.data(), '\n', window);
  if (newline == nullptr) {
    return window > limits_.max_inline ? error(kTooBigInline) : need_more(start, 0, in.size());
  }
  const auto line_length = static_cast<std::size_t>(static_cast<const char*>(newline) - rest.data());
  std::string_view line = rest.substr(0, line_length);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!split_inline(line, args)) return error(kUnbalancedQuotes);
  return {ParseStatus::kCommand, start + line_length + 1, 0, {}};
}

bool RequestParser::split_inline(std::string_view line, std::vector<std::string_view>& args) {
  bool scratch_reserved = false;
  std::size_t i = 0;
  for (;;) {
    while (i < line.size() && is_inline_blank(line[i])) ++i;
    if (i == line.size()) return true;
    const std::size_t begin = i;
    while (i < line.size() && !is_inline_blank(line[i]) && line[i] != '"' && line[i] != '\'') ++i;
    if (i == line.size() || is_inline_blank(line[i])) {
      args.push_back(line.substr(begin, i - begin));  // a plain word: a view into `in`
      continue;
    }
    // A quote: the argument is its plain prefix and the unescaped quoted section, which ends it.
    if (!scratch_reserved) {
      scratch_.clear();
      scratch_.reserve(line.size());
      scratch_reserved = true;
    }
    const std::size_t arg_begin = scratch_.size();
    [[maybe_unused]] const char* const storage = scratch_.data();
    scratch_.append(line.substr(begin, i - begin));
    i = unquote(line, i, scratch_);
    if (i == std::string_view::npos) return false;
    assert(scratch_.data() == storage && "the views handed out must not move");
    args.emplace_back(scratch_.data() + arg_begin, scratch_.size() - arg_begin);
  }
}

}  // namespace kv
