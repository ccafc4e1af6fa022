// TCP on 127.0.0.1: listening on port 0, accepting, connecting, echoing small and large writes,
// closing (on_closed on both sides), connection errors and listen errors, and write() of text
// sending exactly its characters for every kind of argument.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sys/time.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap {
namespace {

using rttest::Log;
using rttest::Probe;

// Echoes every byte back on the connection it came from; reports its port through `port` and
// its connection events to `log`.
class EchoServer : public Reactor {
 public:
  EchoServer(Probe* port, Log<std::string>* log) : port_(port), log_(log) {}
  void on_start() override {
    listener_ = listen("127.0.0.1", 0);
    port_->done(local_port(listener_));
  }
  void on_accept(SocketId listener, SocketId) override {
    log_->add(listener == listener_ ? "server accept" : "server accept on an unknown listener");
  }
  void on_data(SocketId id, std::span<const char> data) override {
    if (!write(id, data)) log_->add("server write failed");
  }
  void on_closed(SocketId, std::error_code ec) override {
    log_->add(ec ? "server closed: " + ec.message() : std::string("server closed"));
  }

 private:
  Probe* port_;
  Log<std::string>* log_;
  SocketId listener_ = 0;
};

struct Connect {
  std::uint16_t port;
  std::uint64_t bytes;
};

char pattern_byte(std::size_t i) { return static_cast<char>((i * 131 + i / 4093) & 0xff); }

// Connects, writes `bytes` bytes of a pattern in one write, collects the echo in its heap, checks
// it, closes.
class EchoClient : public Reactor {
 public:
  explicit EchoClient(Log<std::string>* log) : log_(log) { handle<&EchoClient::on_connect_to>(); }
  void on_connect_to(const Connect& c) {
    sent_.resize(c.bytes);
    for (std::size_t i = 0; i < sent_.size(); ++i) sent_[i] = pattern_byte(i);
    socket_ = connect("127.0.0.1", c.port);
  }
  void on_connect(SocketId id, std::error_code ec) override {
    if (id != socket_) log_->add("client: on_connect for an unknown socket");
    if (ec) {
      log_->add("client connect failed: " + std::to_string(ec.value()));
      return;
    }
    log_->add("client connected");
    if (!write(id, sent_)) log_->add("client write failed");
  }
  void on_data(SocketId id, std::span<const char> data) override {
    received_.append(data.data(), data.size());
    if (received_.size() < sent_.size()) return;
    log_->add(received_ == sent_ ? "client echo intact" : "client echo corrupt");
    close(id);
  }
  void on_closed(SocketId id, std::error_code ec) override {
    if (id != socket_) log_->add("client: on_closed for an unknown socket");
    log_->add(ec ? "client closed: " + ec.message() : std::string("client closed"));
  }

 private:
  Log<std::string>* log_;
  SocketId socket_ = 0;
  std::string sent_;
  std::string received_;
};

bool contains(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v) {
    if (x == s) return true;
  }
  return false;
}

void echo_round_trip(std::uint64_t bytes) {
  Probe port;
  Log<std::string> log;
  Runtime rt(RuntimeConfig{.workers = 2});
  SpawnOptions on0;
  on0.worker = 0;
  SpawnOptions on1;
  on1.worker = 1;
  rt.spawn<EchoServer>(on0, &port, &log);
  ASSERT_TRUE(port.wait_for(1));
  ASSERT_NE(port.value(), 0u) << "local_port gave no port for a listener on port 0";
  const ActorRef client = rt.spawn<EchoClient>(on1, &log);
  ASSERT_EQ(rt.send(client, Connect{static_cast<std::uint16_t>(port.value()), bytes}),
            SendResult::kOk);
  ASSERT_TRUE(rttest::wait_until([&] {
    const auto events = log.items();
    return contains(events, "client closed") && contains(events, "server closed");
  })) << "events so far: "
      << testing::PrintToString(log.items());
  const std::vector<std::string> events = log.items();
  EXPECT_TRUE(contains(events, "server accept"));
  EXPECT_TRUE(contains(events, "client connected"));
  EXPECT_TRUE(contains(events, "client echo intact")) << testing::PrintToString(events);
  EXPECT_EQ(events.size(), 5u) << "no other event, error or duplicate: "
                               << testing::PrintToString(events);
}

TEST(Tcp, AClientGetsItsBytesEchoedBackAndBothSidesHearTheClose) { echo_round_trip(13); }

TEST(Tcp, AWriteOfSeveralMegabytesArrivesIntact) { echo_round_trip(8u << 20); }

// A port nobody listens on: bound once by the test and released.
std::uint16_t closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::system_error(errno, std::generic_category(), "closed_port");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

TEST(Tcp, ConnectingToAClosedPortReportsTheErrorThroughOnConnect) {
  Log<std::string> log;
  Runtime rt(RuntimeConfig{.workers = 1});
  const ActorRef client = rt.spawn<EchoClient>(&log);
  ASSERT_EQ(rt.send(client, Connect{closed_port(), 10}), SendResult::kOk);
  ASSERT_TRUE(log.wait_size(1));
  ASSERT_TRUE(rt.wait_idle());
  const std::vector<std::string> events = log.items();
  ASSERT_EQ(events.size(), 1u) << testing::PrintToString(events);
  EXPECT_EQ(events[0], "client connect failed: " + std::to_string(ECONNREFUSED));
  EXPECT_TRUE(rt.alive(client));
}

// Tries listens that must fail, reports each error code (0 when nothing was thrown), then checks
// that the socket operations it is left with refuse unknown ids quietly.
class BadListener : public Reactor {
 public:
  BadListener(Log<std::string>* log, std::uint16_t busy_port) : log_(log), busy_(busy_port) {}
  void on_start() override {
    attempt("not an address", "no-such-host", 0);
    attempt("not local", "192.0.2.1", 0);
    attempt("in use", "127.0.0.1", busy_);
    log_->add(write(999, std::span<const char>("x", 1)) ? "write to 999 succeeded"
                                                        : "write to 999 refused");
    close(999);  // unknown: a no-op
    log_->add("done");
  }

 private:
  void attempt(const std::string& what, const std::string& host, std::uint16_t port) {
    try {
      listen(host, port);
      log_->add(what + ": no error");
    } catch (const std::system_error& e) {
      log_->add(what + ": " + std::to_string(e.code().value()));
    }
  }
  Log<std::string>* log_;
  std::uint16_t busy_;
};

// On each connection, writes one argument of every kind write() takes, then closes.
class TextWriter : public Reactor {
 public:
  explicit TextWriter(Probe* port) : port_(port) {}
  void on_start() override { port_->done(local_port(listen("127.0.0.1", 0))); }
  void on_accept(SocketId, SocketId c) override {
    write(c, "OK\n");                                   // a literal: not its NUL
    const char* pointer = "ptr|";
    write(c, pointer);                                  // up to the NUL
    const std::string text = "str|";
    write(c, text);
    write(c, std::string("tmp|"));                      // an rvalue std::string
    write(c, std::string_view("view|"));
    write(c, std::vector<char>{'v', 'e', 'c', '|'});     // bytes
    write(c, std::array<char, 4>{'a', 'r', 'r', '|'});
    write(c, std::span<const char>("span|", 5));
    char buffer[16] = "buf|";                           // a char array: up to its first NUL
    write(c, buffer);
    write(c, std::string("a\0b|", 4));                  // a std::string's size, NUL and all
    write(c, std::span("z"));                           // a span keeps every byte: "z\0"
    close(c);
  }

 private:
  Probe* port_;
};

// Connects with a plain socket and reads until the peer closes.
std::string read_all_from(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  const timeval timeout{5, 0};  // a hang fails the test instead of stopping the suite
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::string received;
  char chunk[256];
  for (ssize_t n; (n = ::read(fd, chunk, sizeof chunk)) > 0;) received.append(chunk, static_cast<std::size_t>(n));
  ::close(fd);
  return received;
}

TEST(Tcp, WriteSendsExactlyTheCharactersOfTextAndEveryByteOfASpan) {
  Probe port;
  Runtime rt(RuntimeConfig{.workers = 1});
  rt.spawn<TextWriter>(&port);
  ASSERT_TRUE(port.wait_for(1));
  const std::string received = read_all_from(static_cast<std::uint16_t>(port.value()));
  const std::string expected = "OK\nptr|str|tmp|view|vec|arr|span|buf|" +
                               std::string("a\0b|", 4) + std::string("z\0", 2);
  EXPECT_EQ(received, expected);
  EXPECT_EQ(rt.stats().failures, 0u);
}

TEST(Tcp, ListeningOnABadAddressThrowsSystemErrorAndTheReactorCarriesOn) {
  // A port in use by the test itself.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);

  Log<std::string> log;
  Runtime rt(RuntimeConfig{.workers = 1});
  const ActorRef r = rt.spawn<BadListener>(&log, ntohs(addr.sin_port));
  ASSERT_TRUE(log.wait_size(5));
  ::close(fd);
  const std::vector<std::string> events = log.items();
  EXPECT_EQ(events[0], "not an address: " + std::to_string(EINVAL));
  EXPECT_EQ(events[1], "not local: " + std::to_string(EADDRNOTAVAIL));
  EXPECT_EQ(events[2], "in use: " + std::to_string(EADDRINUSE));
  EXPECT_EQ(events[3], "write to 999 refused");
  EXPECT_EQ(events[4], "done");
  EXPECT_TRUE(rt.alive(r));
  EXPECT_EQ(rt.stats().failures, 0u);
}

// The server stops: its accepted connection closes, and the client hears it.
class Stopper : public EchoServer {
 public:
  using EchoServer::EchoServer;
  void on_data(SocketId, std::span<const char>) override { stop(); }
};

class Holder : public Reactor {
 public:
  Holder(Log<std::string>* log, std::uint16_t port) : log_(log), port_(port) {}
  void on_start() override { socket_ = connect("127.0.0.1", port_); }
  void on_connect(SocketId id, std::error_code ec) override {
    if (!ec) write(id, std::span<const char>("stop", 4));
  }
  void on_closed(SocketId id, std::error_code) override {
    log_->add(id == socket_ ? "client closed" : "client closed an unknown socket");
  }

 private:
  Log<std::string>* log_;
  std::uint16_t port_;
  SocketId socket_ = 0;
};

TEST(Tcp, AReactorThatStopsClosesItsConnectionsAndThePeerHearsIt) {
  Probe port;
  Log<std::string> server_log;
  Log<std::string> client_log;
  Runtime rt(RuntimeConfig{.workers = 2});
  const ActorRef server = rt.spawn<Stopper>(&port, &server_log);
  ASSERT_TRUE(port.wait_for(1));
  rt.spawn<Holder>(&client_log, static_cast<std::uint16_t>(port.value()));
  ASSERT_TRUE(rt.wait_stopped(server));
  ASSERT_TRUE(client_log.wait_size(1));
  EXPECT_EQ(client_log.items()[0], "client closed");
}

// Listens; after a restore, reports what it hears and listens again.
class Phoenix : public Reactor {
 public:
  explicit Phoenix(Log<std::string>* log) : log_(log) {}
  void on_start() override { listener_ = listen("127.0.0.1", 0); }
  void on_closed(SocketId id, std::error_code ec) override {
    log_->add("closed " + std::string(id == listener_ ? "listener" : "unknown") +
              (ec == std::errc::connection_aborted ? " aborted" : " other: " + ec.message()));
  }
  void on_restored() override {
    const SocketId again = listen("127.0.0.1", 0);
    log_->add(again != listener_ && local_port(again) != 0 ? "restored, listening anew"
                                                           : "restored, listen reused an id");
  }

 private:
  Log<std::string>* log_;
  SocketId listener_ = 0;
};

TEST(Tcp, AfterARestoreEverySocketTheReactorHadIsReportedClosedBeforeOnRestored) {
  rttest::TempDir dir;
  Log<std::string> log;
  Runtime rt(RuntimeConfig{.workers = 1});
  const ActorRef r = rt.spawn<Phoenix>(&log);
  ASSERT_TRUE(rt.wait_idle());
  rt.snapshot(r, dir / "phoenix.snap");
  ASSERT_TRUE(rt.stop(r));
  ASSERT_TRUE(rt.wait_stopped(r));
  EXPECT_TRUE(log.items().empty()) << "a stopping reactor hears no on_closed for its sockets";
  ASSERT_EQ(rt.restore(dir / "phoenix.snap"), r);
  ASSERT_TRUE(log.wait_size(2));
  EXPECT_EQ(log.items(),
            (std::vector<std::string>{"closed listener aborted", "restored, listening anew"}));
}

// A listening socket of the test's own, which accepts only when asked and never reads unless
// asked: the peer that lets a reactor's writes pile up.
class RawListener {
 public:
  RawListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd_, 4) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::system_error(errno, std::generic_category(), "RawListener");
    }
    port_ = ntohs(addr.sin_port);
  }
  ~RawListener() {
    if (conn_ >= 0) ::close(conn_);
    ::close(fd_);
  }
  std::uint16_t port() const { return port_; }
  void accept() { conn_ = ::accept(fd_, nullptr, nullptr); }
  // Reads until the peer closes; returns the byte count.
  std::uint64_t drain() {
    std::vector<char> buffer(1 << 20);
    std::uint64_t total = 0;
    for (;;) {
      const ssize_t n = ::read(conn_, buffer.data(), buffer.size());
      if (n <= 0) return total;
      total += static_cast<std::uint64_t>(n);
    }
  }
  // Closes without reading what waits: the kernel answers with a reset.
  void abort() {
    ::close(conn_);
    conn_ = -1;
  }

 private:
  int fd_ = -1;
  int conn_ = -1;
  std::uint16_t port_ = 0;
};

constexpr std::uint64_t kFlushBytes = 48u << 20;  // far more than loopback socket buffers hold

// Writes kFlushBytes and closes at once, so the close has to flush; reports every event after.
class Flusher : public Reactor {
 public:
  Flusher(Log<std::string>* log, std::uint16_t port) : log_(log), port_(port) {}
  void on_start() override { socket_ = connect("127.0.0.1", port_); }
  void on_connect(SocketId id, std::error_code ec) override {
    if (ec) {
      log_->add("connect failed");
      return;
    }
    std::string data(kFlushBytes, 'f');
    if (!write(id, data)) log_->add("write failed");
    close(id);
    log_->add(write(id, data) ? "write after close accepted" : "closing");
  }
  void on_data(SocketId, std::span<const char>) override { log_->add("data after close"); }
  void on_closed(SocketId id, std::error_code) override {
    log_->add(id == socket_ ? "closed" : "closed an unknown socket");
  }

 private:
  Log<std::string>* log_;
  std::uint16_t port_;
  SocketId socket_ = 0;
};

TEST(Tcp, ASocketStillFlushingAfterCloseMovesWithItsReactorAndFinishesTheFlushThere) {
  RawListener peer;
  Log<std::string> log;
  Runtime rt(RuntimeConfig{.workers = 2});
  SpawnOptions on0;
  on0.worker = 0;
  const ActorRef r = rt.spawn<Flusher>(on0, &log, peer.port());
  ASSERT_TRUE(log.wait_size(1));
  ASSERT_EQ(log.items()[0], "closing");
  // Its socket is closed for the reactor but still flushing, and on_closed is yet to come: the
  // socket moves with the bytes it has not sent and the close completes on worker 1.
  rt.move(r, 1);
  ASSERT_TRUE(rttest::wait_until([&] { return rt.stats(r).worker == 1; }));
  peer.accept();
  EXPECT_EQ(peer.drain(), kFlushBytes) << "the close lost queued bytes";
  ASSERT_TRUE(log.wait_size(2));
  ASSERT_TRUE(rt.wait_idle());
  EXPECT_EQ(log.items(), (std::vector<std::string>{"closing", "closed"}));
}

TEST(Tcp, APeerThatGoesAwayWhileAClosedSocketFlushesCausesOneOnClosed) {
  RawListener peer;
  Log<std::string> log;
  Runtime rt(RuntimeConfig{.workers = 1});
  rt.spawn<Flusher>(&log, peer.port());
  ASSERT_TRUE(log.wait_size(1));
  peer.accept();
  peer.abort();
  ASSERT_TRUE(log.wait_size(2));
  ASSERT_TRUE(rt.wait_idle());
  EXPECT_EQ(log.items(), (std::vector<std::string>{"closing", "closed"}));
}

TEST(Tcp, TheRuntimeShutsDownCleanlyWhileAClosedSocketStillFlushes) {
  RawListener peer;
  Log<std::string> log;
  {
    Runtime rt(RuntimeConfig{.workers = 1});
    rt.spawn<Flusher>(&log, peer.port());
    ASSERT_TRUE(log.wait_size(1));
  }
  // Nothing to assert but that we got here; ASan's leak check covers the socket's memory.
  EXPECT_EQ(log.items()[0], "closing");
}

}  // namespace
}  // namespace reheap
