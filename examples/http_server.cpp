// A small HTTP/1.1 server on reactors: `GET /` answers 200 with the 16-byte body
// "0123456789abcdef", any other path 404. Keep-alive, pipelining, partial reads.
//
//   http_server [--port P] [--threads N] [--host ADDR]     (defaults: 8080, 1, 127.0.0.1)
//
// Design: one Server reactor per worker thread, each listening on the same port with
// reuse_port = true and owning every connection accepted on its worker.
//   - Sockets belong to a worker's libuv loop: a socket is a uv handle registered with one loop,
//     and the reactor that opened or accepted it cannot move while it is open. So the unit that
//     owns connections is naturally "the reactor on this worker".
//   - SO_REUSEPORT gives each worker its own listening socket and lets the kernel spread new
//     connections over them, so no accepted socket ever has to be handed to another thread.
//   - A reactor per connection was rejected: each reactor is a heap (a 64 MiB chunk of address
//     space, a few pages committed on creation and given back with madvise on destruction, which
//     costs page faults and TLB shootdowns: spawn + stop is on the order of 10 µs here), and
//     every request would also cross a mailbox between the listener and the connection.
//     Connections are short state (a buffer and a flag), so they are entries of a map instead.
// Per-connection state lives in the Server's heap: an unordered_map<SocketId, Connection> whose
// Connection holds the bytes of a request not yet complete. Data is parsed straight from the
// worker's read buffer when nothing is pending (the common case), and the responses to every
// complete request of one read go out in one write.
//
// Parsing is strict and bounded: a request head (request line and headers) larger than
// kMaxHeadBytes gets 431 and the connection is closed; a malformed request line or header, a bad
// Content-Length, or a missing Host in HTTP/1.1 gets 400 and a close; another HTTP version 505;
// a chunked body 501; a body over kMaxBodyBytes 413. Bodies within the bound are read and
// ignored. Keep-alive follows RFC 9112: HTTP/1.1 keeps the connection unless "Connection: close",
// HTTP/1.0 closes it unless "Connection: keep-alive".
//
// Shutdown: SIGINT and SIGTERM are blocked in every thread (the runtime's workers inherit the
// mask from main) and main takes them with sigwait(), then calls Runtime::shutdown(), which
// closes the listeners, lets the reactors finish and closes their connections. Unlike a signal
// handler, sigwait runs in an ordinary thread, so it can call anything; it plays the part of a
// self-pipe without the pipe.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>

#include "reheap/runtime.h"
#include "reserved_port.h"

namespace {

constexpr std::size_t kMaxHeadBytes = 8 * 1024;   // request line + headers + the blank line
constexpr std::size_t kMaxBodyBytes = 64 * 1024;  // bodies are read and ignored
static_assert(kMaxHeadBytes >= 64 && kMaxBodyBytes <= SIZE_MAX / 2);

// ---- responses ---------------------------------------------------------------------------------

constexpr std::string_view kOk200 =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 16\r\n\r\n0123456789abcdef";
constexpr std::string_view kOk200KeepAlive =  // to HTTP/1.0 clients that asked for keep-alive
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 16\r\n"
    "Connection: keep-alive\r\n\r\n0123456789abcdef";
constexpr std::string_view kOk200Close =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 16\r\n"
    "Connection: close\r\n\r\n0123456789abcdef";
constexpr std::string_view kNotFoundBody = "not found\n";

// The status line and headers of a response without its body, for the less common answers.
void append_head(std::string& out, int status, const char* reason, std::size_t length,
                 bool keep_alive, bool http10, const char* extra = "") {
  char line[256];
  const int n = std::snprintf(line, sizeof line,
                              "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
                              "Content-Length: %zu\r\n%s%s\r\n",
                              status, reason, length,
                              !keep_alive ? "Connection: close\r\n"
                              : http10    ? "Connection: keep-alive\r\n"
                                          : "",
                              extra);
  out.append(line, static_cast<std::size_t>(n));
}

// ---- parsing -----------------------------------------------------------------------------------

// RFC 9110 tchar: what method and header names are made of.
constexpr bool is_token_char(char c) noexcept {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  for (char t : std::string_view("!#$%&'*+-.^_`|~")) {
    if (c == t) return true;
  }
  return false;
}

constexpr auto kTokenChars = [] {
  std::array<bool, 256> table{};
  for (int c = 0; c < 256; ++c) table[static_cast<std::size_t>(c)] = is_token_char(static_cast<char>(c));
  return table;
}();

bool is_token(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (char c : s) {
    if (!kTokenChars[static_cast<unsigned char>(c)]) return false;
  }
  return true;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Whether the comma-separated list `value` holds `token` (case-insensitive), as in Connection.
bool has_token(std::string_view value, std::string_view token) noexcept {
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    if (iequals(trim(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

enum class Status { kIncomplete, kOk, kBad, kHeadTooLarge, kBodyTooLarge, kVersion, kChunked };

struct Request {
  std::size_t length = 0;  // head + body bytes, when kOk
  std::string_view method;
  std::string_view path;   // the target without its query
  bool http10 = false;
  bool keep_alive = true;
};

enum class Line { kOk, kIncomplete, kBad };

// The line of the request head that starts at `pos`: its text without the CRLF in `line`, and
// `pos` moved past it. A bare CR or LF is malformed. Never looks past kMaxHeadBytes (+1 for the
// LF of a CR on the bound). memchr rather than a byte loop: it is most of the parsing time.
Line next_line(std::string_view in, std::size_t& pos, std::string_view& line) noexcept {
  const std::string_view rest = in.substr(pos, std::min(in.size(), kMaxHeadBytes + 1) - pos);
  const std::size_t lf = rest.find('\n');
  if (lf == std::string_view::npos) {
    const std::size_t cr = rest.find('\r');
    return cr != std::string_view::npos && cr + 1 < rest.size() ? Line::kBad : Line::kIncomplete;
  }
  if (lf == 0 || rest[lf - 1] != '\r') return Line::kBad;
  line = rest.substr(0, lf - 1);
  if (line.find('\r') != std::string_view::npos) return Line::kBad;
  pos += lf + 1;
  return Line::kOk;
}

// Parses one request at the start of `in`, in one pass over its head. Views in `r` point into
// `in`.
Status parse(std::string_view in, Request& r) {
  // The status of a head that has no complete next line.
  const auto unfinished = [&in](Line l) {
    if (l == Line::kBad) return Status::kBad;
    return in.size() >= kMaxHeadBytes ? Status::kHeadTooLarge : Status::kIncomplete;
  };
  // Request line: method SP target SP version. Empty lines before it are ignored (RFC 9112,
  // 2.2); they count towards the bound, or endless empty lines would grow the pending buffer.
  std::size_t pos = 0;
  std::string_view line;
  do {
    if (const Line l = next_line(in, pos, line); l != Line::kOk) return unfinished(l);
  } while (line.empty());
  const std::size_t sp1 = line.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return Status::kBad;
  r.method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(r.method) || target.empty()) return Status::kBad;
  if (version == "HTTP/1.1") {
    r.http10 = false;
  } else if (version == "HTTP/1.0") {
    r.http10 = true;
  } else if (version.size() == 8 && version.starts_with("HTTP/") && version[6] == '.') {
    return Status::kVersion;
  } else {
    return Status::kBad;  // also a target with a space in it
  }
  r.path = target.substr(0, target.find('?'));

  // Headers.
  bool have_host = false;
  bool have_length = false;
  std::size_t body = 0;
  bool close = false;
  bool keep_alive = false;
  for (;;) {
    std::string_view field;
    if (const Line l = next_line(in, pos, field); l != Line::kOk) return unfinished(l);
    if (field.empty()) break;  // the end of the head
    const std::size_t colon = field.find(':');
    if (colon == std::string_view::npos) return Status::kBad;
    const std::string_view name = field.substr(0, colon);
    if (!is_token(name)) return Status::kBad;  // also rejects "Name :" and obsolete folding
    const std::string_view value = trim(field.substr(colon + 1));
    if (iequals(name, "host")) {
      if (have_host) return Status::kBad;
      have_host = true;
    } else if (iequals(name, "connection")) {
      close = close || has_token(value, "close");
      keep_alive = keep_alive || has_token(value, "keep-alive");
    } else if (iequals(name, "content-length")) {
      std::size_t n = 0;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec == std::errc::result_out_of_range) return Status::kBodyTooLarge;
      if (ec != std::errc() || ptr != value.data() + value.size() || value.empty()) {
        return Status::kBad;
      }
      if (have_length && n != body) return Status::kBad;
      have_length = true;
      body = n;
    } else if (iequals(name, "transfer-encoding")) {
      return Status::kChunked;
    }
  }
  if (!r.http10 && !have_host) return Status::kBad;
  if (body > kMaxBodyBytes) return Status::kBodyTooLarge;
  r.keep_alive = r.http10 ? keep_alive && !close : !close;
  const std::size_t total = pos + body;
  if (in.size() < total) return Status::kIncomplete;
  r.length = total;
  return Status::kOk;
}

// ---- the reactor -------------------------------------------------------------------------------

// How the Servers' start reaches main (globals: static data, which a reactor may refer to).
std::atomic<int> g_started{0};  // Servers whose on_start is over, listening or not
std::atomic<bool> g_failed{false};

void started(bool ok) {
  if (!ok) g_failed.store(true);
  g_started.fetch_add(1);
  g_started.notify_all();
}

struct Connection {
  std::string pending;  // the start of a request not yet complete
};

class Server final : public reheap::Reactor {
 public:
  Server(std::string host, std::uint16_t port) : host_(std::move(host)), port_(port) {}

  void on_start() override {
    try {
      listen(host_, port_, /*reuse_port=*/true);
    } catch (const std::system_error& e) {
      std::fprintf(stderr, "http_server: worker %d: %s\n", worker(), e.what());
      started(false);
      stop();
      return;
    }
    started(true);
  }

  void on_accept(reheap::SocketId, reheap::SocketId socket) override {
    set_no_delay(socket, true);
    connections_.try_emplace(socket);
  }

  void on_data(reheap::SocketId socket, std::span<const char> data) override {
    const auto it = connections_.find(socket);
    if (it == connections_.end()) return;  // closing: the rest is ignored
    std::string& pending = it->second.pending;
    out_.clear();
    bool keep = true;
    if (pending.empty()) {  // parse in place, keep only an incomplete tail
      const std::string_view in(data.data(), data.size());
      const std::size_t used = serve(in, keep);
      if (keep && used < in.size()) pending.assign(in.substr(used));
    } else {
      pending.append(data.data(), data.size());
      const std::size_t used = serve(pending, keep);
      pending.erase(0, used);
    }
    if (!out_.empty()) write(socket, out_);
    if (!keep) {
      connections_.erase(it);
      close(socket);  // after the write: queued bytes are flushed first
    }
  }

  void on_closed(reheap::SocketId socket, std::error_code) override {
    connections_.erase(socket);
  }

 private:
  // Answers every complete request at the start of `in` into out_; returns the bytes used.
  // `keep` turns false when the connection must close after out_ is written.
  std::size_t serve(std::string_view in, bool& keep) {
    std::size_t used = 0;
    while (used < in.size()) {
      Request r;
      const Status status = parse(in.substr(used), r);
      switch (status) {
        case Status::kIncomplete:
          return used;
        case Status::kOk:
          break;
        case Status::kBad:
          return fail(400, "Bad Request", keep, used);
        case Status::kHeadTooLarge:
          return fail(431, "Request Header Fields Too Large", keep, used);
        case Status::kBodyTooLarge:
          return fail(413, "Content Too Large", keep, used);
        case Status::kVersion:
          return fail(505, "HTTP Version Not Supported", keep, used);
        case Status::kChunked:
          return fail(501, "Not Implemented", keep, used);
      }
      used += r.length;
      respond(r);
      if (!r.keep_alive) {
        keep = false;
        return used;
      }
    }
    return used;
  }

  void respond(const Request& r) {
    const bool head = r.method == "HEAD";
    if (r.path != "/") {
      append_head(out_, 404, "Not Found", kNotFoundBody.size(), r.keep_alive, r.http10);
      if (!head) out_.append(kNotFoundBody);
    } else if (r.method != "GET" && !head) {
      append_head(out_, 405, "Method Not Allowed", 0, r.keep_alive, r.http10,
                  "Allow: GET, HEAD\r\n");
    } else if (head) {
      append_head(out_, 200, "OK", 16, r.keep_alive, r.http10);
    } else {
      out_.append(!r.keep_alive ? kOk200Close : r.http10 ? kOk200KeepAlive : kOk200);
    }
  }

  std::size_t fail(int status, const char* reason, bool& keep, std::size_t used) {
    append_head(out_, status, reason, 0, /*keep_alive=*/false, /*http10=*/false);
    keep = false;
    return used;
  }

  std::string host_;
  std::uint16_t port_;
  std::unordered_map<reheap::SocketId, Connection> connections_;
  std::string out_;  // the responses of one read, reused
};

// ---- main --------------------------------------------------------------------------------------

[[noreturn]] void usage(int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: http_server [--port P] [--threads N] [--host ADDR]\n"
               "  --port P     TCP port (default 8080)\n"
               "  --threads N  worker threads, each with a Server reactor (default 1)\n"
               "  --host ADDR  numeric IPv4 or IPv6 address to listen on (default 127.0.0.1)\n");
  std::exit(status);
}

long parse_number(const char* flag, const char* text, long min, long max) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < min || value > max) {
    std::fprintf(stderr, "http_server: %s wants a number from %ld to %ld, not '%s'\n", flag, min,
                 max, text);
    usage(2);
  }
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint16_t port = 8080;
  int threads = 1;
  std::string host = "127.0.0.1";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--port" && has_value) {
      port = static_cast<std::uint16_t>(parse_number("--port", argv[++i], 0, 65535));
    } else if (arg == "--threads" && has_value) {
      threads = static_cast<int>(parse_number("--threads", argv[++i], 1, 256));
    } else if (arg == "--host" && has_value) {
      host = argv[++i];
    } else if (arg == "-h" || arg == "--help") {
      usage(0);
    } else {
      usage(2);
    }
  }

  // Before any thread exists: the workers inherit the mask, so only sigwait below sees these.
  // A handler (never called while they are blocked) is installed too, because a signal whose
  // disposition is "ignore" is discarded even when blocked, and a shell starts its background
  // jobs with SIGINT ignored.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  struct sigaction action{};
  action.sa_handler = [](int) {};
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  reheap::RuntimeConfig config;
  config.workers = threads;
  config.on_failure = [](const reheap::ReactorFailed& failure) {
    // A Server that fails takes its connections with it; rather than serve on with fewer
    // workers, stop the whole server.
    std::fprintf(stderr, "http_server: %s failed in %s: %s\n", failure.name.c_str(),
                 failure.handler.c_str(), failure.what.c_str());
    g_failed.store(true);
    kill(getpid(), SIGTERM);
  };
  // --port 0: one port for every Server, picked before the first listens (reserved_port.h).
  std::optional<examples::ReservedPort> reserved;
  try {
    reserved.emplace(host, port);
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "http_server: %s\n", e.what());
    return 1;
  }
  port = reserved->port();
  reheap::Runtime rt(std::move(config));
  for (int w = 0; w < threads; ++w) {
    reheap::SpawnOptions options;
    options.worker = w;
    options.name = "server " + std::to_string(w);
    rt.spawn<Server>(options, host, port);
  }
  // Until every Server has tried to listen.
  for (int n = g_started.load(); n < threads; n = g_started.load()) g_started.wait(n);
  if (g_failed.load()) {
    rt.shutdown();
    return 1;
  }
  std::printf("http_server: listening on %s:%u with %d worker%s\n", host.c_str(), port, threads,
              threads == 1 ? "" : "s");
  std::fflush(stdout);

  int signal = 0;
  sigwait(&signals, &signal);
  std::printf("http_server: %s, shutting down\n", signal == SIGINT ? "SIGINT" : "SIGTERM");
  rt.shutdown();
  return g_failed.load() ? 1 : 0;
}
