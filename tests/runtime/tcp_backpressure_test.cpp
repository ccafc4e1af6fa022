// TCP backpressure and faults: the high-water mark that write() reports and on_drained, paused
// reading holding a flooding peer in the kernel, a reset while writes are queued, a peer that
// half-closes and still gets its replies, and EMFILE on accept (the listener survives).
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
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

int connect_to(std::uint16_t port, bool nonblocking = false) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  const timeval timeout{5, 0};  // a hang fails the test instead of stopping the suite
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  if (nonblocking) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

std::string read_until_eof(int fd) {
  std::string received;
  char chunk[65536];
  for (ssize_t n; (n = ::read(fd, chunk, sizeof chunk)) > 0;) received.append(chunk, static_cast<std::size_t>(n));
  return received;
}

// ---- the high-water mark and on_drained -------------------------------------------------------

struct Flood {
  std::size_t chunk;
};

// On accept, sets a 64 KiB mark and writes chunks until write() reports the queue above it.
class Flooder : public Reactor {
 public:
  Flooder(Probe* port, Log<std::string>* log, std::atomic<std::uint64_t>* written)
      : port_(port), log_(log), written_(written) {}
  void on_start() override { port_->done(local_port(listener_ = listen("127.0.0.1", 0))); }
  void on_accept(SocketId, SocketId c) override {
    set_write_high_water(c, 64 << 10);
    const std::string chunk(256 << 10, 'x');
    for (int i = 0; i < 1000; ++i) {
      const WriteResult r = write(c, chunk);
      if (!r) {
        log_->add("write failed");
        return;
      }
      written_->fetch_add(chunk.size());
      if (r.above_high_water) {
        log_->add("above after " + std::to_string(i + 1) + " writes");
        return;
      }
    }
    log_->add("never above");
  }
  void on_drained(SocketId c) override {
    log_->add("drained");
    close(c);
  }

 private:
  Probe* port_;
  Log<std::string>* log_;
  std::atomic<std::uint64_t>* written_;
  SocketId listener_ = 0;
};

TEST(TcpBackpressure, WriteReportsTheQueueAboveItsHighWaterMarkAndOnDrainedFollowsWhenItEmpties) {
  Probe port;
  Log<std::string> log;
  std::atomic<std::uint64_t> written{0};
  Runtime rt(RuntimeConfig{.workers = 1});
  rt.spawn<Flooder>(&port, &log, &written);
  ASSERT_TRUE(port.wait_for(1));
  const int fd = connect_to(static_cast<std::uint16_t>(port.value()));
  ASSERT_TRUE(log.wait_size(1));
  // The peer has not read a byte: the kernel holds a few MiB at most, the rest is queued.
  EXPECT_EQ(log.items()[0].rfind("above after ", 0), 0u) << log.items()[0];
  EXPECT_LT(written.load(), 64u << 20);
  EXPECT_EQ(log.size(), 1u) << "on_drained before anyone read";
  const std::string received = read_until_eof(fd);  // the reactor closes once drained
  ::close(fd);
  EXPECT_EQ(received.size(), written.load());
  ASSERT_TRUE(log.wait_size(2));
  EXPECT_EQ(log.items()[1], "drained");
}

// ---- paused reading ---------------------------------------------------------------------------

struct Resume {
  int go = 1;
};

// Pauses reading after its first on_data, until a Resume message.
class SlowReader : public Reactor {
 public:
  SlowReader(Probe* port, std::atomic<std::uint64_t>* received) : port_(port), received_(received) {
    handle<&SlowReader::on_resume>();
  }
  void on_start() override { port_->done(local_port(listen("127.0.0.1", 0))); }
  void on_accept(SocketId, SocketId c) override { connection_ = c; }
  void on_data(SocketId c, std::span<const char> data) override {
    received_->fetch_add(data.size());
    if (!paused_once_) {
      paused_once_ = true;
      pause_reading(c);
    }
  }
  void on_resume(const Resume&) { resume_reading(connection_); }

 private:
  Probe* port_;
  std::atomic<std::uint64_t>* received_;
  SocketId connection_ = 0;
  bool paused_once_ = false;
};

TEST(TcpBackpressure, PausedReadingLeavesAFloodingPeerBlockedInTheKernelUntilResumed) {
  Probe port;
  std::atomic<std::uint64_t> received{0};
  Runtime rt(RuntimeConfig{.workers = 1});
  const ActorRef reader = rt.spawn<SlowReader>(&port, &received);
  ASSERT_TRUE(port.wait_for(1));
  const int fd = connect_to(static_cast<std::uint16_t>(port.value()), /*nonblocking=*/true);
  // Send until the kernel refuses more: the peer's buffers and ours are full.
  const std::string chunk(64 << 10, 'r');
  std::uint64_t sent = 0;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  int idle_rounds = 0;
  while (idle_rounds < 20 && std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = ::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::uint64_t>(n);
      idle_rounds = 0;
    } else {
      ASSERT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK) << std::strerror(errno);
      ++idle_rounds;
      std::this_thread::sleep_for(10ms);
    }
  }
  ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the kernel never pushed back";
  // What reached the reactor is one read at most: the rest waits in the kernel, not in memory.
  EXPECT_LE(received.load(), 256u << 10);
  EXPECT_GT(sent, received.load() + (256u << 10));
  ASSERT_EQ(rt.send(reader, Resume{}), SendResult::kOk);
  ASSERT_TRUE(rttest::wait_until([&] { return received.load() == sent; })) << received.load() << " of " << sent;
  ::close(fd);
}

// ---- a reset while writes are queued -------------------------------------------------------------

// Never reads; writes 16 MiB to each connection at once, most of which waits in the queue.
class Pusher : public Reactor {
 public:
  Pusher(Probe* port, Probe* queued, Log<std::string>* log) : port_(port), queued_(queued), log_(log) {}
  void on_start() override { port_->done(local_port(listen("127.0.0.1", 0))); }
  void on_accept(SocketId, SocketId c) override {
    pause_reading(c);  // only the write path can see the reset
    const std::string chunk(1 << 20, 'p');
    for (int i = 0; i < 16; ++i) write(c, chunk);
    queued_->done(1);
  }
  void on_closed(SocketId, std::error_code ec) override {
    log_->add(ec ? "closed with an error" : "closed cleanly");
  }
  void on_end(SocketId) override { log_->add("end"); }

 private:
  Probe* port_;
  Probe* queued_;
  Log<std::string>* log_;
};

TEST(TcpBackpressure, APeerResetWhileWritesAreQueuedIsOneOnClosedWithTheErrorEvenWhenNotReading) {
  Probe port;
  Probe queued;
  Log<std::string> log;
  Runtime rt(RuntimeConfig{.workers = 1});
  const ActorRef pusher = rt.spawn<Pusher>(&port, &queued, &log);
  ASSERT_TRUE(port.wait_for(1));
  const int fd = connect_to(static_cast<std::uint16_t>(port.value()));
  ASSERT_TRUE(queued.wait_for(1));
  char some[4096];
  ASSERT_GT(::read(fd, some, sizeof some), 0);  // the transfer is under way
  const linger reset{1, 0};                      // close() sends RST instead of FIN
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  ::close(fd);
  ASSERT_TRUE(log.wait_size(1));
  // Two round trips through the reactor's worker loop (Runtime::stats reads there): a second
  // report of the reset, which the loop would make from callbacks already queued when the first
  // came, is logged by the time they are back.
  static_cast<void>(rt.stats(pusher));
  static_cast<void>(rt.stats(pusher));
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log.items()[0], "closed with an error");
  EXPECT_TRUE(rt.wait_idle());
}

// ---- a half-closing peer ------------------------------------------------------------------------

// Answers each read later (on a timer), as a service whose replies come from elsewhere would,
// and closes once the peer has ended and every reply is out.
class LateReplier : public Reactor {
 public:
  LateReplier(Probe* port, Log<std::string>* log) : port_(port), log_(log) {}
  void on_start() override { port_->done(local_port(listen("127.0.0.1", 0))); }
  void on_data(SocketId c, std::span<const char> data) override {
    connection_ = c;
    pending_.append(data.data(), data.size());
    start_timer(20ms);
  }
  void on_timer(TimerId) override {
    for (char& ch : pending_) ch = static_cast<char>(ch - 'a' + 'A');
    if (!write(connection_, pending_)) log_->add("write after the end failed");
    pending_.clear();
    if (ended_) close(connection_);
  }
  void on_end(SocketId) override {
    log_->add("end");
    ended_ = true;
  }
  void on_closed(SocketId, std::error_code ec) override { log_->add(ec ? "closed: " + ec.message() : "closed"); }

 private:
  Probe* port_;
  Log<std::string>* log_;
  SocketId connection_ = 0;
  std::string pending_;
  bool ended_ = false;
};

TEST(TcpBackpressure, APeerThatHalfClosesStillGetsTheRepliesToWhatItSent) {
  Probe port;
  Log<std::string> log;
  Runtime rt(RuntimeConfig{.workers = 1});
  rt.spawn<LateReplier>(&port, &log);
  ASSERT_TRUE(port.wait_for(1));
  const int fd = connect_to(static_cast<std::uint16_t>(port.value()));
  ASSERT_EQ(::write(fd, "hello", 5), 5);
  ASSERT_EQ(::shutdown(fd, SHUT_WR), 0);
  EXPECT_EQ(read_until_eof(fd), "HELLO");
  ::close(fd);
  ASSERT_TRUE(log.wait_size(2));
  EXPECT_EQ(log.items(), (std::vector<std::string>{"end", "closed"}));
}

// Echoes, and keeps the default on_end.
class PlainEcho : public Reactor {
 public:
  PlainEcho(Probe* port, Log<std::string>* log) : port_(port), log_(log) {}
  void on_start() override { port_->done(local_port(listen("127.0.0.1", 0))); }
  void on_data(SocketId c, std::span<const char> data) override { write(c, data); }
  void on_closed(SocketId, std::error_code ec) override { log_->add(ec ? "closed: " + ec.message() : "closed"); }

 private:
  Probe* port_;
  Log<std::string>* log_;
};

TEST(TcpBackpressure, ByDefaultTheEndOfInputClosesTheSocketAfterWhatIsQueued) {
  Probe port;
  Log<std::string> log;
  Runtime rt(RuntimeConfig{.workers = 1});
  rt.spawn<PlainEcho>(&port, &log);
  ASSERT_TRUE(port.wait_for(1));
  const int fd = connect_to(static_cast<std::uint16_t>(port.value()));
  ASSERT_EQ(::write(fd, "echo", 4), 4);
  ASSERT_EQ(::shutdown(fd, SHUT_WR), 0);
  EXPECT_EQ(read_until_eof(fd), "echo");
  ::close(fd);
  ASSERT_TRUE(log.wait_size(1));
  EXPECT_EQ(log.items()[0], "closed");
}

// ---- EMFILE on accept ---------------------------------------------------------------------------

class Acceptor : public Reactor {
 public:
  Acceptor(Probe* port, Log<std::string>* log) : port_(port), log_(log) {}
  void on_start() override { port_->done(local_port(listener_ = listen("127.0.0.1", 0))); }
  void on_accept(SocketId l, SocketId c) override {
    log_->add(l == listener_ ? "accepted" : "accepted on an unknown listener");
    write(c, "hi");
    close(c);
  }
  void on_accept_error(SocketId l, std::error_code ec) override {
    log_->add(l == listener_ ? "accept error: " + std::to_string(ec.value()) : "accept error on an unknown listener");
  }

 private:
  Probe* port_;
  Log<std::string>* log_;
  SocketId listener_ = 0;
};

// The highest descriptor open in this process.
int highest_fd() {
  int highest = 2;
  DIR* dir = ::opendir("/proc/self/fd");
  const int own = ::dirfd(dir);
  while (const dirent* e = ::readdir(dir)) {
    const int fd = std::atoi(e->d_name);
    if (fd != own && fd > highest) highest = fd;
  }
  ::closedir(dir);
  return highest;
}

TEST(TcpBackpressure, EmfileOnAcceptIsReportedAndTheListenerKeepsAccepting) {
  Probe port;
  Log<std::string> log;
  Runtime rt(RuntimeConfig{.workers = 1});
  rt.spawn<Acceptor>(&port, &log);
  ASSERT_TRUE(port.wait_for(1));
  std::vector<int> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(::socket(AF_INET, SOCK_STREAM, 0));
  // Fill every free descriptor below the highest one, then forbid any above it: the process
  // has no descriptor left to give.
  const int top = highest_fd();
  std::vector<int> fillers;
  for (int fd; (fd = ::dup(0)) >= 0 && fd < top;) fillers.push_back(fd);
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(top + 1);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  for (int fd : fillers) ASSERT_LT(fd, top);
  ASSERT_LT(::dup(0), 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port.value()));
  for (int fd : clients) ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const bool reported = log.wait_size(1);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  for (int fd : fillers) ::close(fd);
  for (int fd : clients) ::close(fd);
  ASSERT_TRUE(reported);
  EXPECT_EQ(log.items()[0], "accept error: " + std::to_string(EMFILE));
  EXPECT_GE(rt.stats().accept_errors, 1u);
  // Descriptors are back: the same listener accepts again.
  const int fd = connect_to(static_cast<std::uint16_t>(port.value()));
  EXPECT_EQ(read_until_eof(fd), "hi");
  ::close(fd);
  const auto events = log.items();
  EXPECT_EQ(events.back(), "accepted");
}

}  // namespace
}  // namespace reheap
