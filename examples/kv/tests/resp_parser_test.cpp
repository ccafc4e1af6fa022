// RequestParser specification: what a client's bytes parse to, how a caller drives the parser over
// a stream that arrives in pieces, and which malformed requests are refused with which message.
#include "resp_parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace kv {
namespace {

using namespace std::string_literals;
using Command = std::vector<std::string>;

Command copy(const std::vector<std::string_view>& args) { return Command(args.begin(), args.end()); }

std::string bulk(std::string_view payload) {
  return "$" + std::to_string(payload.size()) + "\r\n" + std::string(payload) + "\r\n";
}
std::string multibulk(const Command& command) {
  std::string out = "*" + std::to_string(command.size()) + "\r\n";
  for (const auto& arg : command) out += bulk(arg);
  return out;
}

// One parse of `in`, keeping the arguments as strings.
struct Parsed {
  ParseResult result;
  Command args;
};
Parsed parse_once(std::string_view in, ParseLimits limits = {}) {
  RequestParser parser(limits);
  std::vector<std::string_view> args;
  const ParseResult result = parser.parse(in, args);
  return {result, copy(args)};
}

// A caller as the server will be one: it appends each chunk to its buffer, then takes commands
// until the parser needs more, dropping `consumed` bytes after every call.
struct Stream {
  std::vector<Command> commands;
  std::string_view error;  // empty unless the stream ended in an error
};
Stream feed(const std::vector<std::string>& chunks, ParseLimits limits = {}) {
  RequestParser parser(limits);
  std::vector<std::string_view> args;
  std::string buffer;
  Stream stream;
  for (const auto& chunk : chunks) {
    buffer += chunk;
    for (;;) {
      const ParseResult result = parser.parse(buffer, args);
      EXPECT_LE(result.consumed, buffer.size());
      if (result.status == ParseStatus::kError) {
        stream.error = result.error;
        return stream;
      }
      if (result.status == ParseStatus::kNeedMore) {
        EXPECT_TRUE(args.empty());
        EXPECT_TRUE(result.need == 0 || result.need > buffer.size());
        buffer.erase(0, result.consumed);
        break;
      }
      EXPECT_FALSE(args.empty()) << "an empty command must never be reported";
      stream.commands.push_back(copy(args));
      buffer.erase(0, result.consumed);
    }
  }
  return stream;
}

const std::string kSet = multibulk({"SET", "key", "value"});
const std::string kGet = multibulk({"GET", "key"});

// ---- multibulk ---------------------------------------------------------------------------------

TEST(RespParserMultibulk, ParsesOneCommandAndConsumesExactlyIt) {
  const Parsed p = parse_once(kSet + "*1\r\n");
  EXPECT_EQ(p.result.status, ParseStatus::kCommand);
  EXPECT_EQ(p.result.consumed, kSet.size());
  EXPECT_EQ(p.args, (Command{"SET", "key", "value"}));
}

TEST(RespParserMultibulk, ArgumentsAreViewsIntoTheInput) {
  RequestParser parser;
  std::vector<std::string_view> args;
  ASSERT_EQ(parser.parse(kGet, args).status, ParseStatus::kCommand);
  ASSERT_EQ(args.size(), 2u);
  EXPECT_EQ(args[0].data(), kGet.data() + kGet.find("GET"));
  EXPECT_EQ(args[1].data(), kGet.data() + kGet.find("key"));
}

TEST(RespParserMultibulk, PipelinedCommandsChainThroughConsumed) {
  const std::string in = kSet + kGet + multibulk({"PING"});
  RequestParser parser;
  std::vector<std::string_view> args;
  std::size_t offset = 0;
  std::vector<Command> seen;
  std::vector<std::size_t> offsets;
  while (offset < in.size()) {
    const ParseResult result = parser.parse(std::string_view(in).substr(offset), args);
    ASSERT_EQ(result.status, ParseStatus::kCommand);
    seen.push_back(copy(args));
    offset += result.consumed;
    offsets.push_back(offset);
  }
  EXPECT_EQ(seen, (std::vector<Command>{{"SET", "key", "value"}, {"GET", "key"}, {"PING"}}));
  EXPECT_EQ(offsets, (std::vector<std::size_t>{kSet.size(), kSet.size() + kGet.size(), in.size()}));
}

TEST(RespParserMultibulk, BulksAreBinarySafe) {
  const std::string value = "a\0b\r\nc\r\n"s;
  const Parsed p = parse_once(multibulk({"SET", "k\r\n", value}));
  EXPECT_EQ(p.result.status, ParseStatus::kCommand);
  EXPECT_EQ(p.args, (Command{"SET", "k\r\n", value}));
}

TEST(RespParserMultibulk, EmptyBulkIsAnEmptyArgument) {
  const Parsed p = parse_once("*2\r\n$4\r\nECHO\r\n$0\r\n\r\n");
  EXPECT_EQ(p.result.status, ParseStatus::kCommand);
  EXPECT_EQ(p.args, (Command{"ECHO", ""}));
}

TEST(RespParserMultibulk, PartialCommandNeedsMoreAndConsumesNothing) {
  for (std::size_t n = 0; n < kSet.size(); ++n) {
    const Parsed p = parse_once(std::string_view(kSet).substr(0, n));
    EXPECT_EQ(p.result.status, ParseStatus::kNeedMore) << "prefix " << n;
    EXPECT_EQ(p.result.consumed, 0u);
    EXPECT_TRUE(p.args.empty());
  }
}

TEST(RespParserMultibulk, ReusesTheCapacityOfArgs) {
  RequestParser parser;
  std::vector<std::string_view> args;
  args.reserve(8);
  const auto* storage = args.data();
  const std::string in = kSet + kGet;
  ASSERT_EQ(parser.parse(in, args).status, ParseStatus::kCommand);
  ASSERT_EQ(parser.parse(std::string_view(in).substr(kSet.size()), args).status,
            ParseStatus::kCommand);
  EXPECT_EQ(args.data(), storage);
}

// ---- streams split anywhere --------------------------------------------------------------------

const std::string kMixedPipeline = kSet + "\r\n" + kGet + "*0\r\n" + "PING\r\n" +
                                   multibulk({"SET", "bin", "x\0\r\ny"s}) + "*-1\r\n" +
                                   "SET \"a b\" 'c'\n" + multibulk({"DEL", "a", "b", "c"});
const std::vector<Command> kMixedCommands = {
    {"SET", "key", "value"}, {"GET", "key"}, {"PING"},           {"SET", "bin", "x\0\r\ny"s},
    {"SET", "a b", "c"},     {"DEL", "a", "b", "c"}};

TEST(RespParserStream, WholeBufferGivesEveryCommand) {
  const Stream s = feed({kMixedPipeline});
  EXPECT_EQ(s.error, "");
  EXPECT_EQ(s.commands, kMixedCommands);
}

TEST(RespParserStream, EverySplitPointGivesTheSameCommands) {
  for (std::size_t split = 0; split <= kMixedPipeline.size(); ++split) {
    const Stream s = feed({kMixedPipeline.substr(0, split), kMixedPipeline.substr(split)});
    EXPECT_EQ(s.error, "") << "split at " << split;
    EXPECT_EQ(s.commands, kMixedCommands) << "split at " << split;
  }
}

TEST(RespParserStream, OneByteAtATimeGivesTheSameCommands) {
  std::vector<std::string> chunks;
  for (char c : kMixedPipeline) chunks.emplace_back(1, c);
  const Stream s = feed(chunks);
  EXPECT_EQ(s.error, "");
  EXPECT_EQ(s.commands, kMixedCommands);
}

TEST(RespParserStream, EveryPrefixIsNeedMoreOrAgreesWithTheWholeBuffer) {
  const Parsed whole = parse_once(kMixedPipeline);
  for (std::size_t n = 0; n < kSet.size(); ++n) {
    const Parsed p = parse_once(std::string_view(kMixedPipeline).substr(0, n));
    EXPECT_EQ(p.result.status, ParseStatus::kNeedMore) << n;
  }
  for (std::size_t n = kSet.size(); n <= kMixedPipeline.size(); ++n) {
    const Parsed p = parse_once(std::string_view(kMixedPipeline).substr(0, n));
    EXPECT_EQ(p.result.status, ParseStatus::kCommand) << n;
    EXPECT_EQ(p.result.consumed, whole.result.consumed) << n;
    EXPECT_EQ(p.args, whole.args) << n;
  }
}

// ---- the need hint -----------------------------------------------------------------------------

TEST(RespParserNeed, BigBulkAsksForItsWholePayloadOnce) {
  const std::size_t size = 10 * 1024 * 1024;
  const std::string head = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + std::to_string(size) + "\r\n";
  std::string in = head + std::string(64 * 1024, 'v');
  Parsed p = parse_once(in);
  ASSERT_EQ(p.result.status, ParseStatus::kNeedMore);
  EXPECT_EQ(p.result.consumed, 0u);
  EXPECT_EQ(p.result.need, head.size() + size + 2);
  EXPECT_EQ(p.result.need_after_consumed(), p.result.need);

  in.resize(p.result.need - 1, 'v');  // one byte short: the final '\n'
  in.back() = '\r';
  EXPECT_EQ(parse_once(in).result.status, ParseStatus::kNeedMore);
  in += '\n';
  p = parse_once(in);
  ASSERT_EQ(p.result.status, ParseStatus::kCommand);
  EXPECT_EQ(p.result.consumed, in.size());
  EXPECT_EQ(p.args[2].size(), size);
}

TEST(RespParserNeed, ACallerHonouringItParsesABigValueInLinearTime) {
  // 10 MiB arriving in 64 KiB reads: 160 reads, but parse() runs only when `need` bytes are here.
  const std::string in = multibulk({"SET", "k", std::string(10 * 1024 * 1024, 'v')});
  RequestParser parser;
  std::vector<std::string_view> args;
  std::size_t have = 0;
  std::size_t need = 0;
  int calls = 0;
  for (;;) {
    have = std::min(in.size(), have + 64 * 1024);
    if (have < need) continue;
    ++calls;
    const ParseResult result = parser.parse(std::string_view(in).substr(0, have), args);
    if (result.status == ParseStatus::kCommand) break;
    ASSERT_EQ(result.status, ParseStatus::kNeedMore);
    need = result.need;
  }
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(args[2].size(), 10u * 1024 * 1024);
}

TEST(RespParserNeed, CountsAtLeastSixBytesForEveryElementNotYetSeen) {
  // "$5\r\nvalue\r\n" is complete up to byte 4 + 9 + 11, and two six-byte elements must follow.
  const std::string in = "*4\r\n$3\r\nSET\r\n$5\r\nva";
  const Parsed p = parse_once(in);
  ASSERT_EQ(p.result.status, ParseStatus::kNeedMore);
  EXPECT_EQ(p.result.need, 4u + 9u + 11u + 2u * 6u);
}

TEST(RespParserNeed, IsALowerBoundForEveryPrefix) {
  const std::string first = multibulk({"MSET", std::string(1000, 'a'), "b", std::string(300, 'c')});
  const std::string in = first + kGet;
  for (std::size_t n = 0; n < in.size(); ++n) {
    const Parsed p = parse_once(std::string_view(in).substr(0, n));
    if (p.result.status != ParseStatus::kNeedMore || p.result.need == 0) continue;
    EXPECT_GT(p.result.need, n);
    EXPECT_LE(p.result.need, first.size()) << "prefix " << n << " asks past the command's end";
    const Parsed short_of_need = parse_once(std::string_view(in).substr(0, p.result.need - 1));
    EXPECT_EQ(short_of_need.result.status, ParseStatus::kNeedMore) << "prefix " << n;
  }
}

TEST(RespParserNeed, SaturatesInsteadOfOverflowing) {
  ParseLimits limits;
  limits.max_bulk = SIZE_MAX;
  limits.max_args = SIZE_MAX;
  const Parsed big = parse_once("*1\r\n$18446744073709551615\r\nab", limits);
  ASSERT_EQ(big.result.status, ParseStatus::kNeedMore);
  EXPECT_EQ(big.result.need, SIZE_MAX);
  const Parsed many = parse_once("*18446744073709551615\r\n$1\r\na\r\n", limits);
  ASSERT_EQ(many.result.status, ParseStatus::kNeedMore);
  EXPECT_EQ(many.result.need, SIZE_MAX);
}

// ---- inline commands ---------------------------------------------------------------------------

TEST(RespParserInline, PingInline) {
  const Parsed p = parse_once("PING\r\n");
  EXPECT_EQ(p.result.status, ParseStatus::kCommand);
  EXPECT_EQ(p.result.consumed, 6u);
  EXPECT_EQ(p.args, (Command{"PING"}));
}

TEST(RespParserInline, BareLineFeedEndsALine) {
  const Parsed p = parse_once("GET k\nGET j\n");
  EXPECT_EQ(p.result.consumed, 6u);
  EXPECT_EQ(p.args, (Command{"GET", "k"}));
}

TEST(RespParserInline, SplitsOnRunsOfSpacesAndTabs) {
  const Parsed p = parse_once("  SET\t\tkey  \t value \r\n");
  EXPECT_EQ(p.args, (Command{"SET", "key", "value"}));
}

TEST(RespParserInline, PlainWordsAreViewsIntoTheInput) {
  const std::string in = "GET key\r\n";
  RequestParser parser;
  std::vector<std::string_view> args;
  ASSERT_EQ(parser.parse(in, args).status, ParseStatus::kCommand);
  EXPECT_EQ(args[1].data(), in.data() + 4);
}

TEST(RespParserInline, DoubleQuotesTakeBlanksAndEscapes) {
  const Parsed p = parse_once(R"(SET "a b" "\x41\x7a\n\r\t\b\a\"\\\q" "")" "\r\n");
  EXPECT_EQ(p.result.status, ParseStatus::kCommand);
  EXPECT_EQ(p.args, (Command{"SET", "a b", "Az\n\r\t\b\a\"\\q", ""}));
}

TEST(RespParserInline, HexEscapeNeedsTwoHexDigits) {
  const Parsed p = parse_once(R"("\x4" "\xg1" "\x00")" "\n");
  EXPECT_EQ(p.args, (Command{"x4", "xg1", "\0"s}));
}

TEST(RespParserInline, SingleQuotesEscapeOnlyTheQuote) {
  const Parsed p = parse_once(R"(SET 'it\'s' 'a "b" \n')" "\r\n");
  EXPECT_EQ(p.args, (Command{"SET", "it's", R"(a "b" \n)"}));
}

TEST(RespParserInline, QuoteMayOpenInsideAWord) {
  const Parsed p = parse_once("SET foo\"bar baz\" x\r\n");
  EXPECT_EQ(p.args, (Command{"SET", "foobar baz", "x"}));
}

TEST(RespParserInline, ManyQuotedArgumentsStayValidTogether) {
  std::string in = "RPUSH l";
  Command expected = {"RPUSH", "l"};
  for (int i = 0; i < 200; ++i) {
    in += " \"v\\x41" + std::to_string(i) + "\"";  // "v\x41<i>"
    expected.push_back("vA" + std::to_string(i));
  }
  const Parsed p = parse_once(in + "\r\n");
  ASSERT_EQ(p.result.status, ParseStatus::kCommand);
  EXPECT_EQ(p.args, expected);
}

TEST(RespParserInline, CarriageReturnInsideQuotesIsKept) {
  const Parsed p = parse_once("ECHO \"a\rb\"\r\n");
  EXPECT_EQ(p.args, (Command{"ECHO", "a\rb"}));
}

TEST(RespParserInline, NulIsAnOrdinaryByte) {
  const Parsed p = parse_once("ECHO a\0b\r\n"s);
  EXPECT_EQ(p.args, (Command{"ECHO", "a\0b"s}));
}

TEST(RespParserInline, LineWithoutNewlineNeedsMore) {
  const Parsed p = parse_once("GET key");
  EXPECT_EQ(p.result.status, ParseStatus::kNeedMore);
  EXPECT_EQ(p.result.consumed, 0u);
  EXPECT_EQ(p.result.need, 0u);
}

// ---- empty commands ----------------------------------------------------------------------------

TEST(RespParserEmpty, EmptyAndBlankLinesAreSkipped) {
  const std::string in = "\r\n\n  \t\r\n\r\nPING\r\n";
  const Parsed p = parse_once(in);
  EXPECT_EQ(p.result.status, ParseStatus::kCommand);
  EXPECT_EQ(p.result.consumed, in.size());
  EXPECT_EQ(p.args, (Command{"PING"}));
}

TEST(RespParserEmpty, ZeroAndNullArraysAreSkipped) {
  const std::string in = "*0\r\n*-1\r\n" + kGet;
  const Parsed p = parse_once(in);
  EXPECT_EQ(p.result.status, ParseStatus::kCommand);
  EXPECT_EQ(p.result.consumed, in.size());
  EXPECT_EQ(p.args, (Command{"GET", "key"}));
}

TEST(RespParserEmpty, OnlyEmptyCommandsAreConsumedWithNeedMore) {
  RequestParser parser;
  std::vector<std::string_view> args;
  const std::string in = "\r\n*0\r\n\n*-1\r\n";
  const ParseResult first = parser.parse(in, args);
  EXPECT_EQ(first.status, ParseStatus::kNeedMore);
  EXPECT_EQ(first.consumed, in.size());
  EXPECT_TRUE(args.empty());
  // The caller drops them; what is left is nothing, and nothing more is consumed: no spinning.
  const ParseResult again = parser.parse(std::string_view(in).substr(first.consumed), args);
  EXPECT_EQ(again.status, ParseStatus::kNeedMore);
  EXPECT_EQ(again.consumed, 0u);
}

TEST(RespParserEmpty, EmptyCommandsBeforeAPartialOneAreConsumed) {
  const std::string in = "\r\n*0\r\n*2\r\n$3\r\nGET\r\n$3\r\nke";
  const Parsed p = parse_once(in);
  EXPECT_EQ(p.result.status, ParseStatus::kNeedMore);
  EXPECT_EQ(p.result.consumed, 6u);
  EXPECT_EQ(p.result.need, in.size() + 3);  // "y\r\n"
  EXPECT_EQ(p.result.need_after_consumed(), in.size() + 3 - 6);
}

// ---- errors ------------------------------------------------------------------------------------

void expect_error(std::string_view in, std::string_view message, ParseLimits limits = {}) {
  const Parsed p = parse_once(in, limits);
  EXPECT_EQ(p.result.status, ParseStatus::kError) << testing::PrintToString(std::string(in));
  EXPECT_EQ(p.result.error, message) << testing::PrintToString(std::string(in));
  EXPECT_EQ(p.result.consumed, 0u);
  EXPECT_TRUE(p.args.empty());
}

TEST(RespParserErrors, InvalidMultibulkLength) {
  for (const char* in : {"*abc\r\n", "*-2\r\n", "*-10\r\n", "*+1\r\n", "*\r\n", "*01\r\n",
                         "*-0\r\n", "*1\rX", "*1 \r\n", "*1\n", "*-1x", "*0x1\r\n"}) {
    expect_error(in, "Protocol error: invalid multibulk length");
  }
}

TEST(RespParserErrors, ElementNotStartingWithDollar) {
  expect_error("*1\r\n:1\r\n", "Protocol error: expected '$', got ':'");
  expect_error("*2\r\n$1\r\na\r\n*1\r\n", "Protocol error: expected '$', got '*'");
  expect_error("*1\r\n\r\n", "Protocol error: expected '$', got '\\x0d'");
  expect_error("*1\r\n\xff", "Protocol error: expected '$', got '\\xff'");
}

TEST(RespParserErrors, InvalidBulkLength) {
  for (const char* in : {"$abc\r\n", "$-1\r\n", "$+1\r\n", "$01\r\n", "$\r\n", "$1x", "$1\rx",
                         "$ 1\r\n", "$-"}) {
    expect_error("*1\r\n"s + in, "Protocol error: invalid bulk length");
  }
}

TEST(RespParserErrors, BulkNotFollowedByCrlf) {
  expect_error("*1\r\n$3\r\nabcd\r\n", "Protocol error: bulk string not followed by CRLF");
  expect_error("*1\r\n$3\r\nabc\rX", "Protocol error: bulk string not followed by CRLF");
  expect_error("*1\r\n$3\r\nabc\n\r", "Protocol error: bulk string not followed by CRLF");
}

TEST(RespParserErrors, UnbalancedQuotes) {
  for (const char* in : {"SET \"abc\r\n", "SET 'abc\r\n", "SET \"abc\"def\r\n", "SET 'a'b\n",
                         "SET \"abc\\\r\n", "\"\n", "x \"a\\\"\n"}) {
    expect_error(in, "Protocol error: unbalanced quotes in request");
  }
}

TEST(RespParserErrors, ErrorAfterEmptyCommands) {
  expect_error("\r\n*0\r\n*1\r\n:", "Protocol error: expected '$', got ':'");
}

TEST(RespParserErrors, LengthsThatOverflowSixtyFourBitsAreInvalid) {
  ParseLimits unlimited;
  unlimited.max_args = SIZE_MAX;
  unlimited.max_bulk = SIZE_MAX;
  for (const char* digits : {"18446744073709551616", "18446744073709551625",
                             "99999999999999999999", "340282366920938463463374607431768211456"}) {
    expect_error("*"s + digits + "\r\n", "Protocol error: invalid multibulk length", unlimited);
    expect_error("*1\r\n$"s + digits + "\r\n", "Protocol error: invalid bulk length", unlimited);
  }
}

TEST(RespParserErrors, ALongDigitStringFailsBeforeItsLineEnds) {
  // Bounded: the parser does not wait for the CRLF of a number that is already too big.
  expect_error("*" + std::string(100, '9'), "Protocol error: invalid multibulk length");
  expect_error("*1\r\n$" + std::string(100, '9'), "Protocol error: invalid bulk length");
}

// ---- limits ------------------------------------------------------------------------------------

TEST(RespParserLimits, DefaultsAreDocumentedValues) {
  const ParseLimits limits;
  EXPECT_EQ(limits.max_args, 1024u * 1024u);
  EXPECT_EQ(limits.max_bulk, 512u * 1024u * 1024u);
  EXPECT_EQ(limits.max_inline, 64u * 1024u);
}

TEST(RespParserLimits, MultibulkCountAboveMaxArgs) {
  const ParseLimits limits;
  const std::string at = "*" + std::to_string(limits.max_args) + "\r\n";
  EXPECT_EQ(parse_once(at).result.status, ParseStatus::kNeedMore);
  expect_error("*" + std::to_string(limits.max_args + 1) + "\r\n",
               "Protocol error: invalid multibulk length");
  ParseLimits three;
  three.max_args = 3;
  EXPECT_EQ(parse_once(kSet, three).result.status, ParseStatus::kCommand);
  expect_error(multibulk({"a", "b", "c", "d"}), "Protocol error: invalid multibulk length", three);
}

TEST(RespParserLimits, BulkLengthAboveMaxBulk) {
  const ParseLimits limits;
  const Parsed at = parse_once("*1\r\n$" + std::to_string(limits.max_bulk) + "\r\n");
  EXPECT_EQ(at.result.status, ParseStatus::kNeedMore);
  expect_error("*1\r\n$" + std::to_string(limits.max_bulk + 1) + "\r\n",
               "Protocol error: invalid bulk length");
  ParseLimits small;
  small.max_bulk = 5;
  EXPECT_EQ(parse_once(kSet, small).result.status, ParseStatus::kCommand);
  expect_error(multibulk({"SET", "k", "sixsix"}), "Protocol error: invalid bulk length", small);
}

TEST(RespParserLimits, InlineLineAboveMaxInline) {
  const ParseLimits limits;
  const std::string at(limits.max_inline, 'a');
  EXPECT_EQ(parse_once(at).result.status, ParseStatus::kNeedMore);
  EXPECT_EQ(parse_once(at + "\n").result.status, ParseStatus::kCommand);
  EXPECT_EQ(parse_once(at.substr(1) + "\r\n").result.status, ParseStatus::kCommand);
  expect_error(at + "a", "Protocol error: too big inline request");
  expect_error(at + "a\r\n", "Protocol error: too big inline request");
  expect_error(at + "\r\n", "Protocol error: too big inline request");
}

TEST(RespParserLimits, ZeroLimits) {
  const ParseLimits zero{0, 0, 0};
  expect_error("*1\r\n", "Protocol error: invalid multibulk length", zero);
  expect_error("*1\r\n$1\r\n", "Protocol error: invalid multibulk length", zero);
  expect_error("x", "Protocol error: too big inline request", zero);
  EXPECT_EQ(parse_once("\n*0\r\n", zero).result.consumed, 5u);
}

// ---- hostile input -----------------------------------------------------------------------------

// Bytes that are mostly protocol characters, so the parser is driven deep, not rejected at once.
std::string random_request(std::mt19937_64& rng) {
  static constexpr std::string_view kAlphabet = "*$\r\n\r\n0123456789-+\"'\\x \tabAF";
  std::string out;
  const std::size_t length = rng() % 48;
  for (std::size_t i = 0; i < length; ++i) {
    const auto roll = rng() % 16;
    if (roll == 0) out += static_cast<char>(rng() % 256);
    else if (roll == 1) out += multibulk({"SET", "k", std::string(rng() % 4, 'v')});
    else out += kAlphabet[rng() % kAlphabet.size()];
  }
  return out;
}

TEST(RespParserFuzz, RandomBytesNeverCrashOrReadOutOfBounds) {
  std::mt19937_64 rng(20261124);
  RequestParser parser(ParseLimits{16, 64, 32});
  std::vector<std::string_view> args;
  for (int round = 0; round < 40000; ++round) {
    // An exact-size heap copy, so that ASan sees a read one byte past the end.
    const std::string request = random_request(rng);
    auto bytes = std::make_unique<char[]>(request.size());
    std::copy(request.begin(), request.end(), bytes.get());
    std::string_view in(bytes.get(), request.size());
    for (;;) {
      const ParseResult result = parser.parse(in, args);
      ASSERT_LE(result.consumed, in.size());
      if (result.status == ParseStatus::kError) {
        ASSERT_FALSE(result.error.empty());
        break;
      }
      if (result.status == ParseStatus::kNeedMore) {
        ASSERT_TRUE(result.need == 0 || result.need > in.size());
        ASSERT_TRUE(args.empty());
        break;
      }
      ASSERT_GT(result.consumed, 0u);
      ASSERT_FALSE(args.empty());
      std::size_t total = 0;
      for (auto arg : args) total += std::string(arg).size();  // touches every byte
      ASSERT_LE(total, result.consumed);
      in.remove_prefix(result.consumed);
    }
  }
}

TEST(RespParserFuzz, EveryPrefixOfRandomInputIsNeedMoreOrTheSameOutcome) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 3000; ++round) {
    const std::string in = random_request(rng);
    const ParseLimits limits{16, 64, 32};
    const Parsed whole = parse_once(in, limits);
    for (std::size_t n = 0; n < in.size(); ++n) {
      const Parsed p = parse_once(std::string_view(in).substr(0, n), limits);
      if (p.result.status == ParseStatus::kNeedMore) {
        // The hint never asks for more than the command turns out to take.
        if (p.result.need != 0 && whole.result.status == ParseStatus::kCommand) {
          ASSERT_LE(p.result.need, whole.result.consumed) << testing::PrintToString(in);
        }
        continue;
      }
      ASSERT_EQ(p.result.status, whole.result.status) << testing::PrintToString(in) << " " << n;
      ASSERT_EQ(p.result.consumed, whole.result.consumed) << testing::PrintToString(in);
      ASSERT_EQ(p.result.error, whole.result.error) << testing::PrintToString(in);
      ASSERT_EQ(p.args, whole.args) << testing::PrintToString(in);
    }
  }
}

}  // namespace
}  // namespace kv
