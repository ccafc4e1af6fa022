// Moving a reactor with open sockets: streams in both directions survive many moves with every
// byte exactly once and in order (also with writes queued above the high-water mark and reading
// paused by backpressure), a moved listener keeps accepting under the same id, a half-closed peer,
// paused reading and an owed on_drained survive a move, and a peer reset racing with moves is
// heard exactly once.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap {
namespace {

using namespace std::chrono_literals;
using rttest::Log;
using rttest::Probe;

// Byte i of a stream: a position-dependent pattern, so a byte lost, repeated or moved anywhere
// changes what follows.
char pattern(std::uint64_t i) {
  return static_cast<char>((static_cast<std::uint32_t>(i) * 0x9E3779B1u) >> 24);
}

int connect_to(std::uint16_t port, int receive_buffer = 0) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  const timeval timeout{20, 0};  // a hang fails the test instead of stopping the suite
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  // A small window keeps the reactor's replies queued in the runtime while it moves.
  if (receive_buffer > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  return fd;
}

bool send_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Reads until EOF; returns how many bytes matched the pattern from `first` on before the first
// mismatch, and the total.
struct Received {
  std::uint64_t total = 0;
  std::uint64_t in_order = 0;
  bool eof = false;
};
Received read_pattern(int fd, std::uint64_t first = 0) {
  Received r;
  bool good = true;
  char chunk[16384];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n == 0) r.eof = true;
    if (n <= 0) break;
    for (ssize_t k = 0; k < n; ++k) {
      good = good && chunk[k] == pattern(first + r.total + static_cast<std::uint64_t>(k));
      if (good) ++r.in_order;
    }
    r.total += static_cast<std::uint64_t>(n);
  }
  return r;
}

std::vector<char> pattern_bytes(std::uint64_t first, std::size_t size) {
  std::vector<char> bytes(size);
  for (std::size_t k = 0; k < size; ++k) bytes[k] = pattern(first + k);
  return bytes;
}

// ---- under load: both directions, many moves -------------------------------------------------

struct MovingStreamReport {
  std::uint64_t in_order = 0;  // incoming bytes that matched the pattern, before any mismatch
  std::uint64_t total = 0;
  std::uint64_t above = 0;     // writes that reported the queue above the mark
  std::uint64_t drained = 0;
  std::uint64_t drained_elsewhere = 0;  // drains on another worker than the write that went above
  unsigned workers = 0;        // bit i: handled data on worker i
};

// Answers every n bytes it reads with the next kAnswer * n bytes of its own pattern stream, with
// a 16 KiB mark: above it reading pauses until on_drained. On the peer's EOF it reports and
// closes (what is queued is flushed first).
class MovingAnswerer : public Reactor {
 public:
  static constexpr std::uint64_t kAnswer = 4;
  MovingAnswerer(Probe* port, Probe* above, Log<MovingStreamReport>* reports)
      : port_(port), above_(above), reports_(reports) {}
  void on_start() override { port_->done(local_port(listen("127.0.0.1", 0))); }
  void on_accept(SocketId, SocketId c) override { set_write_high_water(c, 16 << 10); }
  void on_data(SocketId c, std::span<const char> data) override {
    for (const char b : data) {
      if (in_order_ == report_.total && b == pattern(report_.total)) ++in_order_;
      ++report_.total;
    }
    report_.workers |= 1u << worker();
    answer_.resize(kAnswer * data.size());
    for (char& b : answer_) b = pattern(out_++);
    const WriteResult r = write(c, answer_);
    if (r.above_high_water) {
      if (report_.above++ == 0) above_->done(1);
      paused_on_ = worker();
      pause_reading(c);
    }
  }
  void on_drained(SocketId c) override {
    ++report_.drained;
    if (worker() != paused_on_) ++report_.drained_elsewhere;
    resume_reading(c);
  }
  void on_end(SocketId c) override {
    report_.in_order = in_order_;
    reports_->add(report_);
    close(c);
  }

 private:
  Probe* port_;
  Probe* above_;
  Log<MovingStreamReport>* reports_;
  MovingStreamReport report_;
  std::uint64_t in_order_ = 0;
  std::uint64_t out_ = 0;
  int paused_on_ = -1;
  std::vector<char> answer_;
};

TEST(TcpMove, StreamsInBothDirectionsLoseNothingWhileTheReactorMovesBackAndForth) {
  Probe port;
  Probe above;
  Log<MovingStreamReport> reports;
  Runtime rt(RuntimeConfig{.workers = 2});
  SpawnOptions on0;
  on0.worker = 0;
  const ActorRef r = rt.spawn<MovingAnswerer>(on0, &port, &above, &reports);
  ASSERT_TRUE(port.wait_for(1));
  const int fd = connect_to(static_cast<std::uint16_t>(port.value()), 16 << 10);
  constexpr int kMoves = rttest::kSanitized ? 60 : 200;
  constexpr std::size_t kChunk = 64 << 10;
  constexpr std::uint64_t kTotal = static_cast<std::uint64_t>(kMoves) * kChunk;
  // The client reads the answers only once the reactor's queue went above its mark (the kernel's
  // buffers full), so that the moves start with bytes queued in the runtime and reading paused;
  // the answers outgrow what the client reads from then on. If the mark is never reached, the
  // reactor never pauses and the sends below never wait for the reader.
  Received answered;
  std::thread reader([&] {
    above.wait_for(1);
    answered = read_pattern(fd);
  });
  // One chunk, then one move: every move happens with bytes in flight both ways.
  const auto start = std::chrono::steady_clock::now();
  for (int m = 0; m < kMoves; ++m) {
    const std::vector<char> chunk = pattern_bytes(static_cast<std::uint64_t>(m) * kChunk, kChunk);
    ASSERT_TRUE(send_all(fd, chunk.data(), chunk.size())) << std::strerror(errno);
    rt.move(r, (m + 1) % 2);
  }
  ::shutdown(fd, SHUT_WR);
  reader.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::close(fd);
  ASSERT_TRUE(reports.wait_size(1));
  const MovingStreamReport report = reports.items()[0];
  EXPECT_EQ(report.total, kTotal);
  EXPECT_EQ(report.in_order, kTotal) << "the reactor read a byte lost, repeated or out of order";
  EXPECT_EQ(answered.total, MovingAnswerer::kAnswer * kTotal);
  EXPECT_EQ(answered.in_order, MovingAnswerer::kAnswer * kTotal)
      << "the client read a byte lost, repeated or out of order";
  EXPECT_TRUE(answered.eof);
  EXPECT_EQ(report.workers, 3u) << "the data was not handled on both workers";
  EXPECT_GT(report.above, 0u) << "the answers never went above the high-water mark";
  EXPECT_GE(report.drained, report.above);
  std::printf("[ measure  ] %d moves while streaming %llu bytes in and %llu out: %.2f s; "
              "%llu pauses above the mark, %llu drained on another worker\n",
              kMoves, static_cast<unsigned long long>(kTotal),
              static_cast<unsigned long long>(MovingAnswerer::kAnswer * kTotal), seconds,
              static_cast<unsigned long long>(report.above),
              static_cast<unsigned long long>(report.drained_elsewhere));
}

// ---- a moved listener --------------------------------------------------------------------------

struct MovingAccepted {
  SocketId listener;
  int worker;
};

// Accepts and answers each connection with "ok" and a close.
class MovingAcceptor : public Reactor {
 public:
  MovingAcceptor(Probe* port, Log<MovingAccepted>* accepted) : port_(port), accepted_(accepted) {}
  void on_start() override { port_->done(local_port(listener_ = listen("127.0.0.1", 0))); }
  void on_accept(SocketId l, SocketId c) override {
    accepted_->add(MovingAccepted{l == listener_ ? l : 0, worker()});
    write(c, "ok");
    close(c);
  }

 private:
  Probe* port_;
  Log<MovingAccepted>* accepted_;
  SocketId listener_ = 0;
};

TEST(TcpMove, AMovedListenerKeepsAcceptingUnderItsId) {
  Probe port;
  Log<MovingAccepted> accepted;
  Runtime rt(RuntimeConfig{.workers = 2});
  SpawnOptions on0;
  on0.worker = 0;
  const ActorRef r = rt.spawn<MovingAcceptor>(on0, &port, &accepted);
  ASSERT_TRUE(port.wait_for(1));
  const auto p = static_cast<std::uint16_t>(port.value());
  constexpr int kRounds = 40;
  for (int i = 0; i < kRounds; ++i) {
    rt.move(r, (i + 1) % 2);
    // Wait for the move itself, so that the accepts are spread over both workers.
    ASSERT_TRUE(rttest::wait_until([&] { return rt.stats(r).worker == (i + 1) % 2; }));
    const int fd = connect_to(p);
    char reply[8] = {};
    std::size_t got = 0;
    for (ssize_t n; got < sizeof reply && (n = ::read(fd, reply + got, sizeof reply - got)) > 0;) {
      got += static_cast<std::size_t>(n);
    }
    ::close(fd);
    ASSERT_EQ(std::string(reply, got), "ok") << "round " << i;
  }
  ASSERT_TRUE(accepted.wait_size(kRounds));
  unsigned workers = 0;
  for (const MovingAccepted& a : accepted.items()) {
    EXPECT_NE(a.listener, 0u) << "the listener's id changed";
    workers |= 1u << a.worker;
  }
  EXPECT_EQ(workers, 3u);
}

// ---- state that must survive a move --------------------------------------------------------------

struct MovingReply {
  std::uint32_t unused;
};
struct MovingResume {
  std::uint32_t unused;
};
struct MovingReport {
  std::uint32_t unused;
};

// One connection. Reports every event as a line; answers MovingReply (write "reply" and close),
// MovingResume (resume_reading), MovingReport (logs "data N"). `pause` pauses reading on accept.
class MovingKeeper : public Reactor {
 public:
  MovingKeeper(Probe* port, Log<std::string>* log, bool pause) : port_(port), log_(log), pause_(pause) {
    handle<&MovingKeeper::on_reply>();
    handle<&MovingKeeper::on_resume>();
    handle<&MovingKeeper::on_report>();
  }
  void on_start() override { port_->done(local_port(listen("127.0.0.1", 0))); }
  void on_accept(SocketId, SocketId c) override {
    connection_ = c;
    if (pause_) pause_reading(c);
    log_->add("accept");
  }
  void on_data(SocketId, std::span<const char> data) override { data_ += data.size(); }
  void on_end(SocketId) override { log_->add("end after " + std::to_string(data_)); }
  void on_closed(SocketId, std::error_code ec) override { log_->add("closed " + ec.message()); }
  void on_drained(SocketId) override { log_->add("drained"); }
  void on_reply(const MovingReply&) {
    write(connection_, "reply");
    close(connection_);
  }
  void on_resume(const MovingResume&) { resume_reading(connection_); }
  void on_report(const MovingReport&) { log_->add("data " + std::to_string(data_)); }

 private:
  Probe* port_;
  Log<std::string>* log_;
  bool pause_;
  SocketId connection_ = 0;
  std::uint64_t data_ = 0;
};

void move_around(Runtime& rt, ActorRef r, int times) {
  for (int i = 0; i < times; ++i) {
    rt.move(r, (i + 1) % 2);
    ASSERT_TRUE(rttest::wait_until([&] { return rt.stats(r).worker == (i + 1) % 2; }));
  }
}

TEST(TcpMove, AHalfClosedPeerStillGetsItsReplyAfterAMoveAndEndIsHeardOnce) {
  Probe port;
  Log<std::string> log;
  Runtime rt(RuntimeConfig{.workers = 2});
  SpawnOptions on0;
  on0.worker = 0;
  const ActorRef r = rt.spawn<MovingKeeper>(on0, &port, &log, false);
  ASSERT_TRUE(port.wait_for(1));
  const int fd = connect_to(static_cast<std::uint16_t>(port.value()));
  ASSERT_TRUE(send_all(fd, "abc", 3));
  ::shutdown(fd, SHUT_WR);
  ASSERT_TRUE(log.wait_size(2));
  EXPECT_EQ(log.items()[1], "end after 3");
  move_around(rt, r, 3);
  ASSERT_EQ(rt.send(r, MovingReport{}), SendResult::kOk);
  ASSERT_TRUE(log.wait_size(3));
  ASSERT_EQ(rt.send(r, MovingReply{}), SendResult::kOk);
  char reply[16] = {};
  std::size_t got = 0;
  for (ssize_t n; (n = ::read(fd, reply + got, sizeof reply - got)) > 0;) got += static_cast<std::size_t>(n);
  ::close(fd);
  EXPECT_EQ(std::string(reply, got), "reply");
  ASSERT_TRUE(log.wait_size(4));
  const std::vector<std::string> lines = log.items();
  EXPECT_EQ(lines, (std::vector<std::string>{"accept", "end after 3", "data 3", "closed Success"}));
}

TEST(TcpMove, PausedReadingStaysPausedThroughMovesAndResumesWithEveryByte) {
  Probe port;
  Log<std::string> log;
  Runtime rt(RuntimeConfig{.workers = 2});
  SpawnOptions on0;
  on0.worker = 0;
  const ActorRef r = rt.spawn<MovingKeeper>(on0, &port, &log, true);
  ASSERT_TRUE(port.wait_for(1));
  const int fd = connect_to(static_cast<std::uint16_t>(port.value()));
  ASSERT_TRUE(log.wait_size(1));  // accepted, and paused
  const std::vector<char> bytes = pattern_bytes(0, 100000);
  ASSERT_TRUE(send_all(fd, bytes.data(), bytes.size()));
  move_around(rt, r, 4);
  ASSERT_EQ(rt.send(r, MovingReport{}), SendResult::kOk);
  ASSERT_TRUE(log.wait_size(2));
  EXPECT_EQ(log.items()[1], "data 0") << "reading restarted on a move";
  ASSERT_EQ(rt.send(r, MovingResume{}), SendResult::kOk);
  ::shutdown(fd, SHUT_WR);
  ASSERT_TRUE(log.wait_size(3));
  EXPECT_EQ(log.items()[2], "end after 100000");
  ::close(fd);
}

// Writes `size` bytes of the pattern at once to a peer that does not read, with a 1 KiB mark.
class MovingFlood : public Reactor {
 public:
  MovingFlood(Probe* port, Log<std::string>* log, std::size_t size) : port_(port), log_(log), size_(size) {}
  void on_start() override { port_->done(local_port(listen("127.0.0.1", 0))); }
  void on_accept(SocketId, SocketId c) override {
    set_write_high_water(c, 1 << 10);
    std::vector<char> bytes(size_);
    for (std::size_t k = 0; k < size_; ++k) bytes[k] = pattern(k);
    const WriteResult r = write(c, bytes);
    log_->add(r.above_high_water ? "above" : "not above");
  }
  void on_drained(SocketId) override { log_->add("drained on " + std::to_string(worker())); }
  void on_closed(SocketId, std::error_code ec) override { log_->add("closed " + ec.message()); }

 private:
  Probe* port_;
  Log<std::string>* log_;
  std::size_t size_;
};

TEST(TcpMove, QueuedWritesAndTheOwedDrainCrossAMoveInOrder) {
  Probe port;
  Log<std::string> log;
  Runtime rt(RuntimeConfig{.workers = 2});
  SpawnOptions on0;
  on0.worker = 0;
  constexpr std::size_t kSize = 16 << 20;  // above what the kernel buffers on loopback
  const ActorRef r = rt.spawn<MovingFlood>(on0, &port, &log, kSize);
  ASSERT_TRUE(port.wait_for(1));
  const int fd = connect_to(static_cast<std::uint16_t>(port.value()), 16 << 10);
  ASSERT_TRUE(log.wait_size(1));
  ASSERT_EQ(log.items()[0], "above");
  move_around(rt, r, 5);  // ends on worker 1
  Received got;
  std::thread reader([&] { got = read_pattern(fd); });
  ASSERT_TRUE(log.wait_size(2));
  EXPECT_EQ(log.items()[1], "drained on 1");
  rt.stop(r);  // closes the connection: the reader sees EOF
  reader.join();
  ::close(fd);
  EXPECT_EQ(got.total, kSize);
  EXPECT_EQ(got.in_order, kSize);
}

// ---- a reset racing with moves -----------------------------------------------------------------

TEST(TcpMove, APeerResetDuringMovesIsHeardExactlyOnce) {
  constexpr int kRounds = rttest::kSanitized ? 10 : 30;
  for (int round = 0; round < kRounds; ++round) {
    Probe port;
    Log<std::string> log;
    Runtime rt(RuntimeConfig{.workers = 2});
    SpawnOptions on0;
    on0.worker = 0;
    const ActorRef r = rt.spawn<MovingFlood>(on0, &port, &log, std::size_t{4} << 20);
    ASSERT_TRUE(port.wait_for(1));
    const int fd = connect_to(static_cast<std::uint16_t>(port.value()), 16 << 10);
    ASSERT_TRUE(log.wait_size(1));
    // Writes are queued; the reset lands while the reactor moves back and forth.
    std::thread mover([&] {
      for (int i = 0; i < 6; ++i) rt.move(r, (i + 1) % 2);
    });
    const linger abort{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    ::close(fd);
    mover.join();
    ASSERT_TRUE(log.wait_size(2)) << "round " << round;
    move_around(rt, r, 2);
    // A round trip through the mailbox after the moves: a second close would be logged by now
    // if it came from the moves themselves.
    ASSERT_EQ(rt.send(r, MovingReport{}), SendResult::kOk);
    ASSERT_TRUE(rt.wait_idle());
    const std::vector<std::string> lines = log.items();
    int closed = 0;
    for (const std::string& line : lines) closed += line.rfind("closed ", 0) == 0 ? 1 : 0;
    EXPECT_EQ(closed, 1) << "round " << round;
  }
}

// ---- cost of a move with many sockets ----------------------------------------------------------

// Holds `count` connections from its own connects to its own listener.
class MovingMany : public Reactor {
 public:
  MovingMany(Probe* ready, int count) : ready_(ready), count_(count) {}
  void on_start() override {
    const std::uint16_t p = local_port(listen("127.0.0.1", 0));
    for (int i = 0; i < count_; ++i) connect("127.0.0.1", p);
    if (count_ == 0) ready_->done(0);
  }
  void on_accept(SocketId, SocketId) override { count_up(); }
  void on_connect(SocketId, std::error_code ec) override {
    if (!ec) count_up();
  }

 private:
  void count_up() {
    if (++open_ == 2 * count_) ready_->done(static_cast<std::uint64_t>(open_));
  }
  Probe* ready_;
  int count_;
  int open_ = 0;
};

TEST(TcpMove, AReactorWithManySocketsMovesAndReportsTheCost) {
  // The mean includes the test's polling for the arrival; a reactor without sockets is the base.
  for (const int pairs : {0, 64}) {
    Probe ready;
    Runtime rt(RuntimeConfig{.workers = 2});
    SpawnOptions on0;
    on0.worker = 0;
    const ActorRef r = rt.spawn<MovingMany>(on0, &ready, pairs);
    ASSERT_TRUE(ready.wait_for(1));
    constexpr int kMoves = 100;
    const auto start = std::chrono::steady_clock::now();
    move_around(rt, r, kMoves);
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(rt.alive(r));
    std::printf("[ measure  ] a move with %d sockets, request to arrival: %.0f us (mean of %d)\n",
                2 * pairs + 1, us / kMoves, kMoves);
  }
}

}  // namespace
}  // namespace reheap
