// Gateway (see gateway.h): connections, parsing, routing and in-order replies.
#include "gateway.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <span>
#include <system_error>
#include <utility>

#include "command_args.h"
#include "glob.h"
#include "reply.h"

namespace kv {

namespace {

bool equals_lower(std::string_view text, std::string_view lower) {
  if (text.size() != lower.size()) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

// The sections of an INFO text that INFO's arguments ask for ("# Name" lines start them; no
// argument, "all", "everything" or "default" keep all of them), as Redis filters them.
std::string info_sections(std::string_view text, std::span<const std::string> wanted) {
  bool all = wanted.empty();
  for (const std::string& w : wanted) {
    all = all || equals_lower(w, "all") || equals_lower(w, "everything") || equals_lower(w, "default");
  }
  if (all) return std::string(text);
  std::string out;
  while (!text.empty()) {
    std::size_t end = text.find("\r\n# ", 0);
    end = end == std::string_view::npos ? text.size() : end + 2;
    const std::string_view section = text.substr(0, end);
    const std::size_t name_end = section.find("\r\n");
    const std::string_view name = section.substr(2, name_end == std::string_view::npos ? 0 : name_end - 2);
    bool keep = false;
    std::string lowered(name);
    for (char& c : lowered) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    for (const std::string& w : wanted) keep = keep || equals_lower(w, lowered);
    if (keep) out += section;
    text.remove_prefix(end);
  }
  while (out.size() >= 4 && out.ends_with("\r\n\r\n")) out.resize(out.size() - 2);
  return out;
}

constexpr std::string_view kBadClientNameError =
    "ERR Client names cannot contain spaces, newlines or special characters.";

// Redis's rule: printable ASCII without the space, since CLIENT LIST prints names unquoted.
bool valid_client_name(std::string_view name) {
  return std::all_of(name.begin(), name.end(), [](char c) { return c >= '!' && c <= '~'; });
}

// HELLO [protover [AUTH username password] [SETNAME name]], as Redis 7.0 answers it to a client
// that stays on RESP2: the options are checked in Redis's order (the version, the syntax, the
// user, the name), and only a HELLO that passes them all sets the name. There are no users here,
// which is Redis's default (the user "default" with no password): AUTH default passes whatever
// the password, another user does not.
void answer_hello(std::span<const std::string_view> args, std::int64_t id, std::string& name, std::string& out) {
  if (args.size() >= 2) {
    std::int64_t version = 0;
    if (!detail::parse_int64(args[1], version)) {
      append_error(out, "ERR Protocol version is not an integer or out of range");
      return;
    }
    if (version == 3) {
      append_error(out, "NOPROTO unsupported protocol version (reheap-kv speaks RESP2 only)");
      return;
    }
    if (version != 2) {
      append_error(out, "NOPROTO unsupported protocol version");
      return;
    }
  }
  std::optional<std::string_view> user;
  std::optional<std::string_view> new_name;
  for (std::size_t i = 2; i < args.size(); ++i) {
    const std::size_t more = args.size() - 1 - i;
    if (equals_lower(args[i], "auth") && more >= 2) {
      user = args[i + 1];
      i += 2;
    } else if (equals_lower(args[i], "setname") && more >= 1) {
      new_name = args[i + 1];
      i += 1;
    } else {
      append_error(out, "ERR Syntax error in HELLO option '" + std::string(args[i]) + "'");
      return;
    }
  }
  if (user && *user != "default") {
    append_error(out, "WRONGPASS invalid username-password pair or user is disabled.");
    return;
  }
  if (new_name) {
    if (!valid_client_name(*new_name)) {
      append_error(out, kBadClientNameError);
      return;
    }
    name = *new_name;
  }
  // INFO says the same version (saver.cpp): clients that look at either see one server.
  const std::pair<std::string_view, std::string_view> properties[] = {
      {"server", "redis"}, {"version", "7.0.15"}, {"proto", ""}, {"id", ""},
      {"mode", "standalone"}, {"role", "master"}, {"modules", ""}};
  append_array_header(out, 2 * std::size(properties));
  for (const auto& [key, value] : properties) {
    append_bulk(out, key);
    if (key == "proto") {
      append_integer(out, 2);
    } else if (key == "id") {
      append_integer(out, id);
    } else if (key == "modules") {
      append_array_header(out, 0);
    } else {
      append_bulk(out, value);
    }
  }
}

}  // namespace

Gateway::Gateway(GatewayConfig config) : config_(std::move(config)), outbox_(config_.shards.size()) {
  handle<&Gateway::on_reply>();
  handle<&Gateway::on_replies>();
}

void Gateway::on_start() {
  try {
    listen(config_.host, config_.port, /*reuse_port=*/true);
  } catch (const std::system_error& e) {
    if (config_.on_listening != nullptr) config_.on_listening(false, e.what());
    stop();
    return;
  }
  if (config_.on_listening != nullptr) config_.on_listening(true, "");
}

void Gateway::on_accept(reheap::SocketId, reheap::SocketId connection) {
  clients_.try_emplace(connection);
  set_no_delay(connection, true);
  set_write_high_water(connection, kOutputHighWater);
}

void Gateway::on_accept_error(reheap::SocketId, std::error_code error) {
  // The runtime shed the connections it could not accept; say so once in a while, not per try.
  ++accept_errors_;
  if ((accept_errors_ & (accept_errors_ - 1)) == 0) {
    std::fprintf(stderr, "reheap-kv: accepting a connection failed: %s (%llu times)\n", error.message().c_str(),
                 static_cast<unsigned long long>(accept_errors_));
  }
}

void Gateway::on_data(reheap::SocketId socket, std::span<const char> data) {
  const auto it = clients_.find(socket);
  if (it == clients_.end()) return;
  Client& client = it->second;
  if (client.closing) return;
  if (client.input.empty()) {
    // The common case: parse straight from the read buffer, keep only an incomplete tail.
    parse_input(socket, client, std::string_view(data.data(), data.size()), false);
  } else {
    client.input.append(data.data(), data.size());
    if (client.input.size() >= client.need) parse_input(socket, client, client.input, true);
  }
  flush(socket, client);
}

// Parses and dispatches the complete commands at the start of `in`; what is left (an incomplete
// command, or everything after the in-flight bound) stays in client.input.
void Gateway::parse_input(reheap::SocketId socket, Client& client, std::string_view in, bool from_buffer) {
  std::size_t at = 0;
  bool protocol_error = false;
  client.need = 0;
  while (at < in.size() && !client.closing) {
    // The output mark holds parsing back too, not only reading: a read holds up to 64 KiB of
    // requests, which for GETs of a large value ask for hundreds of MB of replies.
    if (client.output_paused || client.slots.size() >= in_flight_window(client)) {
      client.input_paused = true;
      break;
    }
    const ParseResult r = parser_.parse(in.substr(at), args_);
    if (r.status == ParseStatus::kNeedMore) {
      at += r.consumed;
      client.need = r.need_after_consumed();
      break;
    }
    if (r.status == ParseStatus::kError) {
      Slot& slot = client.slots.emplace_back();
      append_error(slot.reply, std::string("ERR ") + std::string(r.error));
      slot.close_after = true;
      protocol_error = true;  // what follows cannot be framed: drop it
      break;
    }
    at += r.consumed;
    dispatch(socket, client, args_);
  }
  if (protocol_error) {
    client.input.clear();
  } else if (from_buffer) {
    client.input.erase(0, at);
  } else {
    client.input.assign(in.substr(at));
  }
  send_batches();  // after `in` is done with: a failed send may flush, and flush may parse
  update_reading(socket, client);
}

void Gateway::dispatch(reheap::SocketId socket, Client& client, std::span<const std::string_view> args) {
  const std::uint64_t sequence = client.first_slot + client.slots.size();
  Slot& slot = client.slots.emplace_back();
  const CommandSpec* spec = find_command(args[0]);
  if (spec == nullptr) {
    std::string message = "ERR unknown command '" + std::string(args[0]).substr(0, 128) + "', with args beginning with: ";
    for (std::size_t i = 1; i < args.size() && i < 8; ++i) message += "'" + std::string(args[i]).substr(0, 64) + "' ";
    append_error(slot.reply, message);
    return;
  }
  if (!arity_ok(*spec, args.size())) {
    append_error(slot.reply, "ERR wrong number of arguments for '" + std::string(spec->name) + "' command");
    return;
  }
  if (spec->route == Route::kServer) {
    answer_server_command(client, slot, sequence, socket, args);
    return;
  }
  const auto shard_count = static_cast<std::uint32_t>(config_.shards.size());
  if (spec->route == Route::kKey) {
    // The common case, one key: the command goes whole to its shard and the shard's reply is the
    // client's, with nothing copied on the way but the command's bytes.
    slot.parts_left = 1;
    send_to_shard(shard_of(args[1], shard_count), socket, sequence, 0, args);
    return;
  }
  std::vector<ShardCommand> parts = split(*spec, args, shard_count);
  if (parts.size() == 1 && spec->route != Route::kAllShards) {
    // One shard holds every key: its reply is the client's, nothing to gather. (An all-shards
    // command still is gathered: SCAN's one part needs its cursor re-encoded.)
    slot.parts_left = 1;
    send_to_shard(parts[0].shard, socket, sequence, 0, views_of(parts[0].args));
    return;
  }
  slot.spec = spec;
  slot.args.assign(args.begin(), args.end());
  slot.parts_left = static_cast<std::uint32_t>(parts.size());
  slot.part_replies.resize(parts.size());
  for (std::uint32_t i = 0; i < parts.size(); ++i) {
    send_to_shard(parts[i].shard, socket, sequence, i, views_of(parts[i].args));
  }
  slot.parts = std::move(parts);
}

std::span<const std::string_view> Gateway::views_of(const std::vector<std::string>& args) {
  part_args_.assign(args.begin(), args.end());
  return part_args_;
}

std::uint64_t Gateway::track(reheap::SocketId socket, std::uint64_t sequence, std::uint32_t part) {
  const std::uint64_t request = next_request_++;
  requests_.emplace(request, Pending{socket, sequence, part});
  return request;
}

// Shard commands wait for the end of the read, to go as one batch per shard (send_batches).
void Gateway::send_to_shard(std::uint32_t shard, reheap::SocketId socket, std::uint64_t sequence,
                            std::uint32_t part, std::span<const std::string_view> args) {
  Outbox& outbox = outbox_[shard];
  outbox.requests.push_back(track(socket, sequence, part));
  append_command(outbox.commands, args);
}

void Gateway::send_to_saver(reheap::SocketId socket, std::uint64_t sequence, std::span<const std::string_view> args) {
  const std::uint64_t request = track(socket, sequence, 0);
  const reheap::SendResult sent =
      send(config_.saver, ShardRequest{.request = request, .args = std::vector<std::string>(args.begin(), args.end())});
  if (sent != reheap::SendResult::kOk) fail_request(request, sent);
}

void Gateway::send_batches() {
  for (std::size_t shard = 0; shard < outbox_.size(); ++shard) {
    Outbox& outbox = outbox_[shard];
    if (outbox.requests.empty()) continue;
    ShardBatch batch;
    batch.requests.swap(outbox.requests);
    batch.commands.swap(outbox.commands);
    const reheap::SendResult sent = send(config_.shards[shard], batch);
    if (sent == reheap::SendResult::kOk) {
      // The buffers go back to the outbox, cleared: their capacity serves the next read.
      batch.requests.clear();
      batch.commands.clear();
      outbox.requests.swap(batch.requests);
      outbox.commands.swap(batch.commands);
      continue;
    }
    // Each failed request is answered in place; answering may flush, parse and queue anew (into
    // the outbox, now empty, sent by that parse's own send_batches).
    for (const std::uint64_t request : batch.requests) fail_request(request, sent);
  }
}

// The shard is gone or its mailbox is full: the client hears it as an error in place.
void Gateway::fail_request(std::uint64_t request, reheap::SendResult why) {
  std::string error;
  append_error(error, std::string("ERR shard unavailable: ") + reheap::to_string(why));
  on_reply(ShardReply{.request = request, .reply = error});
}

void Gateway::answer_server_command(Client& client, Slot& slot, std::uint64_t sequence,
                                    reheap::SocketId socket, std::span<const std::string_view> args) {
  std::string& out = slot.reply;
  switch (find_command(args[0])->id) {
    case CommandId::kPing:
      // The table's arity (-1) is Redis's, which COMMAND reports; the upper bound is checked here,
      // as Redis does.
      if (args.size() > 2) {
        append_error(out, "ERR wrong number of arguments for 'ping' command");
      } else if (args.size() == 2) {
        append_bulk(out, args[1]);
      } else {
        append_simple(out, "PONG");
      }
      return;
    case CommandId::kEcho:
      append_bulk(out, args[1]);
      return;
    case CommandId::kSelect:
      if (args[1] == "0") {
        append_simple(out, "OK");
      } else {
        append_error(out, "ERR DB index is out of range");
      }
      return;
    case CommandId::kQuit:
      append_simple(out, "OK");
      slot.close_after = true;
      return;
    case CommandId::kCommand:
      if (args.size() == 1) {
        append_command_reply(out);
      } else {
        append_command_subcommand_reply(args, out);
      }
      return;
    case CommandId::kClient:
      if (equals_lower(args[1], "setname") || equals_lower(args[1], "getname")) {
        const bool set = equals_lower(args[1], "setname");
        if (args.size() != (set ? 3u : 2u)) {
          append_error(out, std::string("ERR wrong number of arguments for 'client|") + (set ? "setname" : "getname") +
                                "' command");
        } else if (!set) {
          if (client.name.empty()) {
            append_null_bulk(out);
          } else {
            append_bulk(out, client.name);
          }
        } else if (!valid_client_name(args[2])) {
          append_error(out, kBadClientNameError);
        } else {
          client.name = args[2];  // an empty name clears it, as in Redis
          append_ok(out);
        }
      } else if (equals_lower(args[1], "setinfo")) {
        append_simple(out, "OK");
      } else if (args.size() >= 2 && equals_lower(args[1], "id")) {
        append_integer(out, static_cast<std::int64_t>(socket));
      } else {
        append_error(out, "ERR unknown subcommand or wrong number of arguments for 'client' command");
      }
      return;
    case CommandId::kHello:
      answer_hello(args, static_cast<std::int64_t>(socket), client.name, out);
      return;
    case CommandId::kConfig:
      if (args.size() >= 3 && equals_lower(args[1], "get")) {
        append_config_get(args[2], out);
      } else if (args.size() >= 2 && equals_lower(args[1], "set")) {
        append_error(out, "ERR CONFIG SET is not supported by reheap-kv; use the command line");
      } else if (args.size() >= 2 && equals_lower(args[1], "resetstat")) {
        append_simple(out, "OK");
      } else {
        append_error(out, "ERR unknown subcommand or wrong number of arguments for 'config' command");
      }
      return;
    case CommandId::kInfo:
      slot.wrap_info = true;
      slot.args.assign(args.begin() + 1, args.end());  // the sections asked for
      [[fallthrough]];
    case CommandId::kSave:
    case CommandId::kBgsave:
    case CommandId::kLastsave:
      slot.parts_left = 1;
      send_to_saver(socket, sequence, args);
      return;
    default:
      append_error(out, "ERR command not served here");
      return;
  }
}

void Gateway::append_config_get(std::string_view pattern, std::string& out) const {
  const std::pair<std::string_view, std::string_view> settings[] = {
      {"save", config_.save_rules}, {"appendonly", "no"}, {"databases", "1"},
      {"maxmemory", "0"},           {"port", ""},         {"bind", config_.host},
  };
  const std::string port = std::to_string(config_.port);
  std::string lower(pattern);
  for (char& c : lower) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  std::vector<std::pair<std::string_view, std::string_view>> matched;
  for (const auto& [name, value] : settings) {
    if (glob_match(lower, name)) matched.emplace_back(name, name == "port" ? std::string_view(port) : value);
  }
  append_array_header(out, matched.size() * 2);
  for (const auto& [name, value] : matched) {
    append_bulk(out, name);
    append_bulk(out, value);
  }
}

void Gateway::on_reply(const ShardReply& reply) {
  if (const reheap::SocketId socket = apply_reply(reply.request, reply.reply); socket != 0) {
    flush(socket, clients_.at(socket));
  }
}

void Gateway::on_replies(const ShardReplies& replies) {
  // One flush per client, after every reply of the batch is in place: one write each.
  touched_.clear();
  const std::string_view all = replies.replies;
  std::size_t at = 0;
  for (std::size_t i = 0; i < replies.requests.size() && i < replies.lengths.size(); ++i) {
    const std::string_view reply = all.substr(std::min(at, all.size()), replies.lengths[i]);
    at += replies.lengths[i];
    const reheap::SocketId socket = apply_reply(replies.requests[i], reply);
    if (socket != 0 && (touched_.empty() || touched_.back() != socket)) touched_.push_back(socket);
  }
  std::sort(touched_.begin(), touched_.end());
  touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
  for (const reheap::SocketId socket : touched_) {
    const auto it = clients_.find(socket);
    if (it != clients_.end() && !it->second.closing) flush(socket, it->second);
  }
}

reheap::SocketId Gateway::apply_reply(std::uint64_t request, std::string_view reply) {
  const auto pending = requests_.find(request);
  if (pending == requests_.end()) return 0;
  const Pending p = pending->second;
  requests_.erase(pending);
  const auto it = clients_.find(p.socket);
  if (it == clients_.end()) return 0;  // the client has gone
  Client& client = it->second;
  if (p.slot < client.first_slot || p.slot - client.first_slot >= client.slots.size()) return 0;
  Slot& slot = client.slots[p.slot - client.first_slot];
  if (slot.parts_left == 0) return 0;
  if (slot.parts.empty()) {
    if (slot.wrap_info) {
      // The saver's INFO text, with this worker's clients added (the saver sees no sockets).
      std::string text = "# Clients\r\nconnected_clients:" + std::to_string(clients_.size()) + "\r\n\r\n";
      text += reply;
      append_bulk(slot.reply, info_sections(text, slot.args));
      slot.args.clear();
    } else {
      slot.reply = reply;
    }
  } else {
    slot.part_replies[p.part] = reply;
  }
  if (--slot.parts_left == 0 && !slot.parts.empty()) {
    std::vector<std::string_view> args(slot.args.begin(), slot.args.end());
    gather(*slot.spec, args, slot.parts, slot.part_replies, slot.reply);
    slot.args.clear();
    slot.parts.clear();
    slot.part_replies.clear();
  }
  return p.socket;
}

// Writes the replies that are complete, from the front of the queue, in one write.
void Gateway::flush(reheap::SocketId socket, Client& client) {
  out_.clear();
  bool close_now = false;
  while (!client.slots.empty() && client.slots.front().parts_left == 0) {
    Slot& slot = client.slots.front();
    out_ += slot.reply;
    // An average over the last few replies (1/8 per reply), which is what the window needs.
    client.reply_estimate += slot.reply.size() / 8;
    client.reply_estimate -= client.reply_estimate / 8;
    close_now = slot.close_after;
    client.slots.pop_front();
    ++client.first_slot;
    if (close_now) break;
  }
  if (!out_.empty()) {
    const reheap::WriteResult written = write(socket, out_);
    if (written.above_high_water) client.output_paused = true;
  }
  if (out_.capacity() > (1 << 20)) std::string().swap(out_);  // a big reply's buffer is not kept
  if (close_now || (client.ended && client.slots.empty())) {
    client.closing = true;
    client.slots.clear();
    close(socket);  // flushes what is queued, then on_closed
    return;
  }
  if (client.input_paused && !client.output_paused && client.slots.size() <= in_flight_window(client) / 2) {
    client.input_paused = false;
    if (!client.input.empty()) parse_input(socket, client, client.input, true);
    if (!client.slots.empty() && client.slots.front().parts_left == 0) {
      flush(socket, client);
      return;
    }
  }
  update_reading(socket, client);
}

std::size_t Gateway::in_flight_window(const Client& client) {
  const std::size_t window = kOutputHighWater / std::max<std::size_t>(client.reply_estimate, 1);
  return std::clamp(window, kMinInFlight, kMaxInFlight);
}

void Gateway::update_reading(reheap::SocketId socket, Client& client) {
  if (client.ended || client.closing) return;
  const bool pause = client.output_paused || client.input_paused;
  if (pause == client.reading_paused) return;
  client.reading_paused = pause;
  if (pause) {
    pause_reading(socket);
  } else {
    resume_reading(socket);
  }
}

void Gateway::on_drained(reheap::SocketId socket) {
  const auto it = clients_.find(socket);
  if (it == clients_.end()) return;
  Client& client = it->second;
  client.output_paused = false;
  if (client.closing) return;
  flush(socket, client);  // the requests held back by the mark are parsed, if the window allows
}

void Gateway::on_end(reheap::SocketId socket) {
  const auto it = clients_.find(socket);
  if (it == clients_.end()) return;
  Client& client = it->second;
  client.ended = true;  // answer what it sent, then close (flush)
  flush(socket, client);
}

void Gateway::on_closed(reheap::SocketId socket, std::error_code) { clients_.erase(socket); }

}  // namespace kv
