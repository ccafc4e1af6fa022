// A reactor with TCP sockets, recorded under a real runtime and replayed: the socket ids, the
// listener's port and the results of writes come from the log, the writes' bytes are compared,
// and the heap matches at every event - with no socket in the replay; also when the reactor moved
// between workers with its sockets while recorded.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "reheap/testing/replay.h"
#include "replay_support.h"

namespace replay_test {
namespace {

using reheap::SocketId;
using reheap::testing::Replay;

// The port the reactor listens on, for the test's client (a side effect outside the heap that a
// replay repeats harmlessly; no pointer to it is kept in the heap).
std::atomic<std::uint16_t> g_echo_port{0};

// Answers each piece of data with "echo:<data>"; closes the connection after "bye".
class EchoLog : public Reactor {
 public:
  void on_start() override {
    listener_ = listen("127.0.0.1", 0);
    g_echo_port.store(local_port(listener_));
  }
  void on_accept(SocketId, SocketId connection) override {
    connections_.push_back(connection);
    set_no_delay(connection, true);
    set_write_high_water(connection, 1 << 16);  // backpressure calls are outputs, replayed too
    pause_reading(connection);
    resume_reading(connection);
  }
  void on_data(SocketId id, std::span<const char> data) override {
    const std::string text(data.data(), data.size());
    received_ += text;
    write(id, "echo:" + text);
    if (text == "bye") close(id);
  }
  void on_closed(SocketId, std::error_code) override { ++closed_; }
  void on_end(SocketId id) override {
    ++ended_;
    close(id);
  }

  const std::string& received() const { return received_; }
  const std::vector<SocketId>& connections() const { return connections_; }
  SocketId listener() const { return listener_; }
  int closed() const { return closed_; }

 private:
  SocketId listener_ = 0;
  std::vector<SocketId> connections_;
  std::string received_;
  int closed_ = 0;
  int ended_ = 0;
};

// Sends `text` and reads the echo (`echo:` + text) on a blocking socket.
std::string exchange(int fd, const std::string& text) {
  EXPECT_EQ(::send(fd, text.data(), text.size(), 0), static_cast<ssize_t>(text.size()));
  std::string got;
  char buffer[256];
  while (got.size() < text.size() + 5) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    got.append(buffer, static_cast<std::size_t>(n));
  }
  return got;
}

TEST(ReplayTcp, SocketIdsPortsAndWritesComeFromTheLogAndTheHeapMatchesAtEveryEvent) {
  TempDir dir;
  ActorRef echo;
  std::uint16_t port = 0;
  {
    reheap::RuntimeConfig config;
    config.workers = 2;
    reheap::Runtime rt(config);
    reheap::SpawnOptions options;
    options.recording = file_recording(dir.path());
    g_echo_port.store(0);
    echo = rt.spawn<EchoLog>(options);
    const auto listening_by = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while ((port = g_echo_port.load()) == 0 && std::chrono::steady_clock::now() < listening_by) {
      std::this_thread::sleep_for(100us);
    }
    ASSERT_NE(port, 0) << "the echo reactor did not listen within a minute";

    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(exchange(fd, "hello"), "echo:hello");
    EXPECT_EQ(exchange(fd, "bye"), "echo:bye");
    char rest = 0;
    EXPECT_EQ(::recv(fd, &rest, 1, 0), 0);  // the reactor closed it
    ::close(fd);
    EXPECT_TRUE(rt.wait_idle());
  }
  g_echo_port.store(0);

  Replay replay = Replay::open(recording_of(dir.path(), echo));
  ASSERT_TRUE(replay.compares_state());
  // on_start, on_accept, on_data x 2, on_closed (after close), on_stop.
  // on_start, on_accept, on_data "hello", on_data "bye", then whichever on_closed (of the
  // connection the reactor closed, of the listener) completed before the shutdown's on_stop.
  ASSERT_GE(replay.recorded_events(), 5u);
  EXPECT_EQ(replay.events()[1].kind, reheap::EventKind::kAccept);
  EXPECT_EQ(replay.events()[2].kind, reheap::EventKind::kData);
  EXPECT_EQ(replay.events()[3].kind, reheap::EventKind::kData);
  EXPECT_EQ(replay.events().back().kind, reheap::EventKind::kStop);
  int closed_events = 0;
  for (const reheap::testing::RecordedEvent& e : replay.events()) closed_events += e.kind == reheap::EventKind::kClosed;
  EXPECT_EQ(replay.run(), replay.recorded_events());
  EXPECT_EQ(g_echo_port.load(), port);  // local_port() answered the recorded port
  const EchoLog& r = replay.reactor<EchoLog>();
  EXPECT_EQ(r.received(), "hellobye");
  EXPECT_EQ(r.listener(), 1u);
  EXPECT_EQ(r.connections(), (std::vector<SocketId>{2}));
  EXPECT_EQ(r.closed(), closed_events);
}

// A move is not an event of the reactor: one that moves with its sockets between every exchange
// replays the same events, none lost or repeated.
TEST(ReplayTcp, AReactorMovedWithItsSocketsReplaysEveryEventOnce) {
  TempDir dir;
  ActorRef echo;
  constexpr int kExchanges = 12;
  std::string sent;
  {
    reheap::RuntimeConfig config;
    config.workers = 2;
    reheap::Runtime rt(config);
    reheap::SpawnOptions options;
    options.recording = file_recording(dir.path());
    options.worker = 0;
    g_echo_port.store(0);
    echo = rt.spawn<EchoLog>(options);
    std::uint16_t port = 0;
    const auto listening_by = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while ((port = g_echo_port.load()) == 0 && std::chrono::steady_clock::now() < listening_by) {
      std::this_thread::sleep_for(100us);
    }
    ASSERT_NE(port, 0) << "the echo reactor did not listen within a minute";
    rt.move(echo, 1);  // the listener moves too, before the client connects
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    for (int i = 0; i < kExchanges; ++i) {
      const std::string text = "m" + std::to_string(i);
      EXPECT_EQ(exchange(fd, text), "echo:" + text);
      sent += text;
      rt.move(echo, i % 2);
    }
    EXPECT_EQ(exchange(fd, "bye"), "echo:bye");
    sent += "bye";
    char rest = 0;
    EXPECT_EQ(::recv(fd, &rest, 1, 0), 0);  // the reactor closed it
    ::close(fd);
    EXPECT_TRUE(rt.wait_idle());
  }
  g_echo_port.store(0);

  Replay replay = Replay::open(recording_of(dir.path(), echo));
  ASSERT_TRUE(replay.compares_state());
  int data_events = 0;
  for (const reheap::testing::RecordedEvent& e : replay.events()) data_events += e.kind == reheap::EventKind::kData;
  EXPECT_EQ(data_events, kExchanges + 1);
  EXPECT_EQ(replay.run(), replay.recorded_events());
  const EchoLog& r = replay.reactor<EchoLog>();
  EXPECT_EQ(r.received(), sent);
  EXPECT_EQ(r.connections(), (std::vector<SocketId>{2}));
}

}  // namespace
}  // namespace replay_test
