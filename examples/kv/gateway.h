// Gateway: the reactor that owns the client connections of one worker. It parses RESP2 requests,
// answers the server commands itself, sends each data command to the shard (or shards) owning
// its keys, and writes the replies back in each client's command order.
//
// One gateway per worker, each listening on the same port with SO_REUSEPORT, so the kernel
// spreads connections over the workers and a socket never changes threads (a reactor with open
// sockets cannot move). Connections are entries of a map in the gateway's heap, not reactors of
// their own: a reactor is a heap, and a connection is a buffer and a queue.
//
// Ordering. Every command of a client takes a slot at the back of the client's queue when it is
// parsed; the slot is filled when every shard it went to has answered (a multi-key command is
// split per shard and gathered, routing.h), and slots leave from the front only, so replies go
// out in command order whichever shard answers first. Each shard part carries a request number,
// the key of `requests_`; a reply for a client that has gone is dropped.
//
// Batching. The shard parts of one read wait in `outbox_` and go as one ShardBatch per shard at
// the end of the read (send_batches); the shard answers with one ShardReplies, and each client
// it completes is flushed once. With pipelining a message per command would cost more than the
// commands themselves.
//
// Bounds (a client must not be able to eat the server's memory):
//   - input: the parser's limits (resp_parser.h); a request over them gets -ERR and the
//     connection is closed after its earlier replies are written;
//   - commands in flight per client: at most a window of them, so that their replies fit under
//     the output mark: kOutputHighWater over the client's average reply size (an estimate that
//     starts at kInitialReplyEstimate), between kMinInFlight and kMaxInFlight. Past the window,
//     parsing stops and reading is paused until half of it has drained. Without the window, one
//     64 KiB read of pipelined GETs of a 100 KB value would ask the shards for 200 MB of replies
//     before the output mark could be seen;
//   - output: when write() reports the socket's queue above its high-water mark (kOutputHighWater)
//     reading is paused, and so is parsing what was read already, until on_drained. A client
//     that never reads therefore holds at most the mark plus one round of replies, and its
//     unparsed requests wait in `input` (about one read) and in the kernel.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "command_table.h"
#include "protocol.h"
#include "reheap/runtime.h"
#include "resp_parser.h"
#include "routing.h"

namespace kv {

struct GatewayConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  std::vector<reheap::ActorRef> shards;  // by shard index
  reheap::ActorRef saver;                // SAVE, BGSAVE, LASTSAVE, INFO
  std::string save_rules;                // for CONFIG GET save ("3600 1 300 100")
  // Called once from on_start: whether the listener is up, and the error if not.
  void (*on_listening)(bool ok, const char* error) = nullptr;
};

class Gateway : public reheap::Reactor {
 public:
  static constexpr std::size_t kMaxInFlight = 4096;
  static constexpr std::size_t kMinInFlight = 16;
  static constexpr std::size_t kOutputHighWater = 4 << 20;
  // A new client starts at the smallest window (kOutputHighWater / this = kMinInFlight) and
  // earns a larger one as its replies turn out small (the estimate moves 1/8 per reply): a client
  // that pipelines GETs of large values never has more than a few MB of replies in flight.
  static constexpr std::size_t kInitialReplyEstimate = kOutputHighWater / kMinInFlight;

  explicit Gateway(GatewayConfig config);

  void on_start() override;
  void on_accept(reheap::SocketId listener, reheap::SocketId connection) override;
  void on_data(reheap::SocketId socket, std::span<const char> data) override;
  void on_end(reheap::SocketId socket) override;
  void on_drained(reheap::SocketId socket) override;
  void on_closed(reheap::SocketId socket, std::error_code error) override;
  void on_accept_error(reheap::SocketId listener, std::error_code error) override;

 private:
  // One command's place in its client's reply order.
  struct Slot {
    std::uint32_t parts_left = 0;
    bool close_after = false;  // QUIT, or a protocol error: close once this reply is out
    bool wrap_info = false;    // the saver's INFO text, to which this worker's section is added
    const CommandSpec* spec = nullptr;      // multi-part commands: for gather()
    std::vector<std::string> args;          // multi-part commands: for gather()
    std::vector<ShardCommand> parts;        // multi-part commands
    std::vector<std::string> part_replies;  // multi-part commands
    std::string reply;                      // complete when parts_left == 0
  };
  struct Client {
    std::string input;            // bytes received and not parsed yet
    std::size_t need = 0;         // parse again only once input holds this much (parser hint)
    std::deque<Slot> slots;       // in command order
    std::uint64_t first_slot = 0; // the sequence number of slots.front()
    std::size_t reply_estimate = kInitialReplyEstimate;  // moving average of its reply sizes
    bool output_paused = false;   // above the high-water mark: reading paused until on_drained
    bool input_paused = false;    // parsing stopped at the window or the mark: reading paused too
    bool reading_paused = false;  // what was last asked of the runtime
    bool ended = false;           // the peer sent everything (on_end)
    bool closing = false;         // a slot with close_after went out, or the peer ended and all is out
    std::string name;             // CLIENT SETNAME or HELLO SETNAME; empty: none
  };
  struct Pending {
    reheap::SocketId socket;
    std::uint64_t slot;  // the slot's sequence number in its client
    std::uint32_t part;
  };

  void on_reply(const ShardReply& reply);
  void on_replies(const ShardReplies& replies);
  // Puts a reply in its slot; returns the client's socket if it is still there, else 0.
  reheap::SocketId apply_reply(std::uint64_t request, std::string_view reply);
  void parse_input(reheap::SocketId socket, Client& client, std::string_view in, bool from_buffer);
  void dispatch(reheap::SocketId socket, Client& client, std::span<const std::string_view> args);
  void answer_server_command(Client& client, Slot& slot, std::uint64_t sequence,
                             reheap::SocketId socket, std::span<const std::string_view> args);
  // A request number for part `part` of the command in slot `sequence` of `socket`'s client.
  std::uint64_t track(reheap::SocketId socket, std::uint64_t sequence, std::uint32_t part);
  // Queues one part of a command for its shard's batch (sent by send_batches).
  void send_to_shard(std::uint32_t shard, reheap::SocketId socket, std::uint64_t sequence, std::uint32_t part,
                     std::span<const std::string_view> args);
  void send_to_saver(reheap::SocketId socket, std::uint64_t sequence, std::span<const std::string_view> args);
  void send_batches();
  // `args` as views, in part_args_ (valid until the next call).
  std::span<const std::string_view> views_of(const std::vector<std::string>& args);
  void fail_request(std::uint64_t request, reheap::SendResult why);
  void flush(reheap::SocketId socket, Client& client);
  void update_reading(reheap::SocketId socket, Client& client);
  static std::size_t in_flight_window(const Client& client);
  void append_config_get(std::string_view pattern, std::string& out) const;

  GatewayConfig config_;
  RequestParser parser_;
  std::vector<std::string_view> args_;  // the command being dispatched, reused
  std::string out_;                     // the replies of one flush, reused
  std::unordered_map<reheap::SocketId, Client> clients_;
  std::unordered_map<std::uint64_t, Pending> requests_;
  struct Outbox {  // one shard's part of the current read
    std::vector<std::uint64_t> requests;
    std::string commands;  // RESP2 arrays, as ShardBatch carries them
  };
  std::vector<Outbox> outbox_;  // by shard
  std::vector<std::string_view> part_args_;
  std::vector<reheap::SocketId> touched_;          // clients a batch of replies completed
  std::uint64_t next_request_ = 1;
  std::uint64_t accept_errors_ = 0;
};

}  // namespace kv
