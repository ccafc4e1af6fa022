// RequestParser: turns the bytes a Redis client sent into commands, one command per call.
//
// A request comes in one of two forms. Multibulk (RESP2 arrays of bulk strings,
// `*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`) is what every client library and redis-benchmark send, so it is
// the fast path. Inline (`GET k\r\n`, a line split on blanks, with Redis-style "double" and
// 'single' quotes) is what telnet users and redis-benchmark's PING_INLINE send.
//
// The parser is stateless over the input: parse() looks only at `in`, from its start, and keeps
// nothing from earlier calls except scratch bytes for unescaped inline arguments. The caller owns
// the buffer, keeps the bytes not yet consumed, and calls again when more have arrived:
//
//   kCommand   `args` holds the command; `consumed` bytes of `in` are done with (the next command
//              starts there). Execute, then drop `consumed` bytes.
//   kNeedMore  No complete command at the start of `in`. Drop `consumed` bytes anyway: they are
//              empty commands that were skipped (see below); they are 0 for a partial command.
//              Call again once more bytes have arrived, and when `need` is not 0, not before `in`
//              (as it was in this call) would hold `need` bytes - need_after_consumed() is that
//              count after dropping `consumed`. `need` is a lower bound, never an overestimate, so
//              waiting for it never stalls a command that could complete.
//   kError     The stream is broken and cannot be resynchronised. Reply "-ERR <error>\r\n" and
//              close the connection, as Redis does. `consumed` and `need` are 0.
//
// Cost. A partial command is parsed again from its start on the next call, but a bulk string's
// payload is stepped over by its length, never scanned, so a re-parse costs the number of elements
// and not the number of bytes. `need` makes the rest O(n): once a bulk's header is complete it
// covers that bulk's payload and at least 6 bytes ("$0\r\n\r\n") for every element after it, so a
// 100 MB value arriving in 64 KiB reads is parsed twice, not 1600 times. A command of many small
// elements is re-parsed about (element size / 6) * ln(count) times: a million 10-byte arguments in
// 64 KiB reads take 13 calls instead of 250. An inline line is rescanned with memchr, at most
// max_inline + 1 bytes per call.
//
// Empty commands. Redis silently skips a line that is empty or all blanks ("\r\n", "\n") and the
// arrays `*0\r\n` and `*-1\r\n`. parse() never reports them: it steps past them and parses what
// follows, and their bytes are counted in `consumed` whatever the status. A kCommand therefore
// always has at least one argument. A caller cannot spin: each call either returns a command,
// reports an error, or returns kNeedMore after consuming every empty command in `in`, so calling
// again on the same bytes returns kNeedMore with `consumed` 0.
//
// Lifetime. The views in `args` point into `in`, except inline arguments that held quotes or
// escapes: those point into this parser's scratch storage. All stay valid until the next parse()
// call or until the caller changes or drops the bytes of `in`, whichever comes first.
//
// Where this differs from Redis 7, on purpose:
// - A multibulk count below -1 is an error (Redis skips any count <= 0): `*-2` is no request a
//   client sends, and rejecting it keeps "empty command" to the two forms above.
// - The CRLF after a bulk's payload is checked (Redis steps over two bytes blindly).
// - An inline line longer than max_inline is refused even if its newline arrived in the same read
//   (Redis checks only while the newline is missing), so the outcome never depends on how the
//   bytes were split into reads.
// - A NUL byte in an inline line is an ordinary byte (Redis ends the line there).
// - max_args defaults to 1M elements (Redis allows up to INT_MAX): a command longer than that is
//   not one a key-value client sends, and the cap bounds the `args` vector one command can grow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kv {

struct ParseLimits {
  // Elements of one multibulk command. A count above this is "invalid multibulk length".
  std::size_t max_args = 1024 * 1024;
  // Bytes of one bulk string's payload (Redis's proto-max-bulk-len default, 512 MiB).
  std::size_t max_bulk = 512ull * 1024 * 1024;
  // Bytes of one inline line before its '\n' (a '\r' before the '\n' counts), as Redis's
  // PROTO_INLINE_MAX_SIZE.
  std::size_t max_inline = 64 * 1024;
};

enum class ParseStatus : std::uint8_t { kCommand, kNeedMore, kError };

struct ParseResult {
  ParseStatus status;
  // kCommand: bytes of `in` the command took, with the empty commands skipped before it; the
  // next command starts there. kNeedMore: bytes of empty commands skipped, to drop. kError: 0.
  std::size_t consumed = 0;
  // kNeedMore: total bytes of `in` (counted from its start, like `consumed`) needed before it is
  // worth calling again, when known (a bulk whose header is complete), else 0. Always > in.size()
  // when not 0.
  std::size_t need = 0;
  // kError: the Redis-style message without "-ERR " and CRLF, e.g. "Protocol error: invalid bulk
  // length". It points to static storage.
  std::string_view error;

  // kNeedMore: the bytes needed after dropping `consumed`, or 0 when unknown.
  std::size_t need_after_consumed() const noexcept { return need > consumed ? need - consumed : 0; }
};

class RequestParser {
 public:
  explicit RequestParser(ParseLimits limits = {});

  // Parses one command from the start of `in` (see the contract above). `args` is cleared first;
  // it is left empty unless the status is kCommand. With enough capacity in `args`, a multibulk
  // command is parsed without allocating.
  ParseResult parse(std::string_view in, std::vector<std::string_view>& args);

  const ParseLimits& limits() const noexcept { return limits_; }

 private:
  ParseResult parse_multibulk(std::string_view in, std::size_t start,
                              std::vector<std::string_view>& args) const;
  ParseResult parse_after_empty_commands(std::string_view in, std::vector<std::string_view>& args);
  ParseResult parse_inline(std::string_view in, std::size_t start,
                           std::vector<std::string_view>& args);
  // Splits one inline line (without its "\r\n") into `args`; false on unbalanced quotes.
  bool split_inline(std::string_view line, std::vector<std::string_view>& args);

  ParseLimits limits_;
  // The unescaped bytes of this call's quoted inline arguments. It is reserved to the line's
  // length before the first one is written, which unescaping never exceeds, so it does not
  // reallocate while views into it are handed out.
  std::string scratch_;
};

}  // namespace kv
