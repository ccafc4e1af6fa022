// split() and gather(): see routing.h. gather() reads the shards' replies with a minimal RESP2
// reader (the replies come from Keyspace, so they are well formed; a malformed one becomes an
// error reply rather than a crash).
#include "routing.h"

#include <charconv>

#include "command_args.h"
#include "reply.h"

namespace kv {
namespace {

std::vector<std::string> copy_args(std::span<const std::string_view> args) {
  return std::vector<std::string>(args.begin(), args.end());
}

bool parse_uint64(std::string_view text, std::uint64_t& value) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

std::string uint64_text(std::uint64_t value) {
  char buffer[24];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  (void)ec;
  return std::string(buffer, static_cast<std::size_t>(end - buffer));
}

// --- a minimal RESP2 reader ---

// The text of the line starting at `pos` (without CRLF); advances `pos` past the CRLF.
bool read_line(std::string_view reply, std::size_t& pos, std::string_view& line) {
  const std::size_t end = reply.find("\r\n", pos);
  if (end == std::string_view::npos) return false;
  line = reply.substr(pos, end - pos);
  pos = end + 2;
  return true;
}

// Advances `pos` past one complete value.
bool skip_value(std::string_view reply, std::size_t& pos) {
  if (pos >= reply.size()) return false;
  const char kind = reply[pos];
  std::string_view line;
  if (!read_line(reply, pos, line)) return false;
  std::int64_t n = 0;
  switch (kind) {
    case '+': case '-': case ':':
      return true;
    case '$':
      if (!detail::parse_int64(line.substr(1), n)) return false;
      if (n < 0) return true;
      if (pos + static_cast<std::size_t>(n) + 2 > reply.size()) return false;
      pos += static_cast<std::size_t>(n) + 2;
      return true;
    case '*':
      if (!detail::parse_int64(line.substr(1), n)) return false;
      for (std::int64_t i = 0; i < n; ++i) {
        if (!skip_value(reply, pos)) return false;
      }
      return true;
    default:
      return false;
  }
}

// The element count of an array reply and where its first element starts.
bool read_array_header(std::string_view reply, std::size_t& pos, std::int64_t& count) {
  std::string_view line;
  if (pos >= reply.size() || reply[pos] != '*' || !read_line(reply, pos, line)) return false;
  return detail::parse_int64(line.substr(1), count);
}

bool read_integer(std::string_view reply, std::int64_t& value) {
  if (reply.size() < 3 || reply[0] != ':') return false;
  return detail::parse_int64(reply.substr(1, reply.size() - 3), value);
}

void append_malformed(std::string& out) { append_error(out, "ERR malformed reply from a shard"); }

// --- split ---

std::vector<ShardCommand> split_each_key(const CommandSpec& spec,
                                         std::span<const std::string_view> args,
                                         std::uint32_t shard_count) {
  const std::size_t step = spec.key_step < 1 ? 1 : static_cast<std::size_t>(spec.key_step);
  if (args.size() < 2 || (args.size() - 1) % step != 0) {
    ShardCommand whole{args.size() < 2 ? 0 : shard_of(args[1], shard_count), copy_args(args), {}};
    return {std::move(whole)};
  }
  // part_of[s]: the index in `parts` of shard s's part, or -1 while it has none. Parts are created
  // as keys are met and ordered by shard at the end.
  std::vector<std::int64_t> part_of(shard_count, -1);
  std::vector<ShardCommand> parts;
  const std::size_t keys = (args.size() - 1) / step;
  for (std::size_t k = 0; k < keys; ++k) {
    const std::size_t at = 1 + k * step;
    const std::uint32_t shard = shard_of(args[at], shard_count);
    if (part_of[shard] < 0) {
      part_of[shard] = static_cast<std::int64_t>(parts.size());
      parts.push_back(ShardCommand{shard, {std::string(args[0])}, {}});
    }
    ShardCommand& part = parts[static_cast<std::size_t>(part_of[shard])];
    for (std::size_t j = 0; j < step; ++j) part.args.emplace_back(args[at + j]);
    part.positions.push_back(static_cast<std::uint32_t>(k));
  }
  std::vector<ShardCommand> ordered;
  ordered.reserve(parts.size());
  for (std::uint32_t s = 0; s < shard_count; ++s) {
    if (part_of[s] >= 0) ordered.push_back(std::move(parts[static_cast<std::size_t>(part_of[s])]));
  }
  return ordered;
}

ShardCommand split_scan(std::span<const std::string_view> args, std::uint32_t shard_count) {
  std::uint64_t cursor = 0;
  if (args.size() < 2 || !parse_uint64(args[1], cursor)) {
    return ShardCommand{0, copy_args(args), {}};  // the shard replies "invalid cursor"
  }
  ShardCommand part{static_cast<std::uint32_t>(cursor % shard_count), copy_args(args), {}};
  part.args[1] = uint64_text(cursor / shard_count);
  return part;
}

// --- gather ---

void gather_sum(std::span<const std::string> replies, std::string& out) {
  std::int64_t total = 0;
  for (const std::string& reply : replies) {
    std::int64_t value = 0;
    if (!read_integer(reply, value)) return append_malformed(out);
    total += value;
  }
  append_integer(out, total);
}

void gather_mget(std::span<const ShardCommand> parts, std::span<const std::string> replies,
                 std::string& out) {
  std::size_t keys = 0;
  for (const ShardCommand& part : parts) keys += part.positions.size();
  std::vector<std::string_view> values(keys);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string_view reply = replies[i];
    std::size_t pos = 0;
    std::int64_t count = 0;
    if (!read_array_header(reply, pos, count) ||
        count != static_cast<std::int64_t>(parts[i].positions.size())) {
      return append_malformed(out);
    }
    for (std::uint32_t position : parts[i].positions) {
      const std::size_t start = pos;
      if (position >= keys || !skip_value(reply, pos)) return append_malformed(out);
      values[position] = reply.substr(start, pos - start);
    }
  }
  append_array_header(out, keys);
  for (std::string_view value : values) {
    if (value.empty()) return append_malformed(out);  // a key no part answered
    out += value;
  }
}

void gather_keys(std::span<const std::string> replies, std::string& out) {
  std::int64_t total = 0;
  std::size_t body_bytes = 0;
  std::vector<std::string_view> bodies;
  for (const std::string& reply : replies) {
    std::size_t pos = 0;
    std::int64_t count = 0;
    if (!read_array_header(reply, pos, count)) return append_malformed(out);
    total += count;
    bodies.push_back(std::string_view(reply).substr(pos));
    body_bytes += reply.size() - pos;
  }
  out.reserve(out.size() + body_bytes + 16);
  append_array_header(out, static_cast<std::size_t>(total));
  for (std::string_view body : bodies) out += body;
}

void gather_scan(const ShardCommand& part, std::string_view reply, std::uint32_t shard_count,
                 std::string& out) {
  if (shard_count == 0) shard_count = 1;
  std::size_t pos = 0;
  std::int64_t count = 0;
  std::string_view length_line;
  std::string_view cursor_text;
  if (!read_array_header(reply, pos, count) || count != 2 || !read_line(reply, pos, length_line) ||
      !read_line(reply, pos, cursor_text)) {
    return append_malformed(out);
  }
  std::uint64_t local = 0;
  if (!parse_uint64(cursor_text, local)) return append_malformed(out);
  std::uint64_t next = 0;
  if (local != 0) {
    next = local * shard_count + part.shard;
  } else if (part.shard + 1 < shard_count) {
    next = part.shard + 1;  // the start of the next shard: local cursor 0 there
  }
  append_array_header(out, 2);
  append_bulk(out, uint64_text(next));
  out += reply.substr(pos);
}

void gather_randomkey(std::span<const std::string> replies, std::string& out) {
  std::vector<std::string_view> found;
  std::uint64_t mix = 0;
  for (const std::string& reply : replies) {
    if (reply == "$-1\r\n") continue;
    found.push_back(reply);
    mix ^= hash_key(reply);
  }
  if (found.empty()) return append_null_bulk(out);
  out += found[mix % found.size()];
}

std::vector<ShardCommand> split_parts(const CommandSpec& spec,
                                      std::span<const std::string_view> args,
                                      std::uint32_t shard_count) {
  switch (spec.route) {
    case Route::kServer:
      return {};
    case Route::kKey: {
      ShardCommand part{args.size() < 2 ? 0 : shard_of(args[1], shard_count), copy_args(args), {}};
      return {std::move(part)};
    }
    case Route::kEachKey:
      return split_each_key(spec, args, shard_count);
    case Route::kAllShards:
      break;
  }
  if (spec.id == CommandId::kScan) return {split_scan(args, shard_count)};
  std::vector<ShardCommand> parts;
  parts.reserve(shard_count);
  for (std::uint32_t s = 0; s < shard_count; ++s) parts.push_back(ShardCommand{s, copy_args(args), {}});
  return parts;
}

}  // namespace

std::vector<ShardCommand> split(const CommandSpec& spec, std::span<const std::string_view> args,
                                std::uint32_t shard_count) {
  if (shard_count == 0) shard_count = 1;
  std::vector<ShardCommand> parts = split_parts(spec, args, shard_count);
  for (ShardCommand& part : parts) part.shard_count = shard_count;
  return parts;
}

void gather(const CommandSpec& spec, std::span<const std::string_view> args,
            std::span<const ShardCommand> parts, std::span<const std::string> replies,
            std::string& out) {
  (void)args;
  if (parts.size() != replies.size()) return append_malformed(out);
  for (const std::string& reply : replies) {
    if (!reply.empty() && reply[0] == '-') {
      out += reply;
      return;
    }
  }
  if (replies.empty()) {
    // Only a kServer command has no parts; it should not have come here.
    append_error(out, "ERR command has no shard to run on");
    return;
  }
  if (spec.id == CommandId::kScan) {
    return gather_scan(parts[0], replies[0], parts[0].shard_count, out);
  }
  // One shard's reply is already the client's: its keys are in the client's order.
  if (replies.size() == 1) {
    out += replies[0];
    return;
  }
  switch (spec.id) {
    case CommandId::kDel:
    case CommandId::kUnlink:
    case CommandId::kExists:
    case CommandId::kTouch:
    case CommandId::kDbsize:
      return gather_sum(replies, out);
    case CommandId::kMset:
    case CommandId::kFlushdb:
    case CommandId::kFlushall:
    case CommandId::kDebug:
      return append_ok(out);
    case CommandId::kMget:
      return gather_mget(parts, replies, out);
    case CommandId::kKeys:
      return gather_keys(replies, out);
    case CommandId::kRandomkey:
      return gather_randomkey(replies, out);
    default:
      break;
  }
  out += replies[0];
}

}  // namespace kv
