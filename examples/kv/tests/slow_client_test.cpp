// A client that pipelines GETs of a large value and never reads a reply, against the real
// reheap-kv binary: the server must spend a bounded amount of memory on it (gateway.h, "Bounds"),
// however many of its requests one read of the socket happened to hold. Pausing the socket's
// reading is not enough for that: the requests already read and not parsed yet must wait too.
//
// kv_clients.slow_reader (clients/slow_reader.py) checks the same with a client that keeps
// sending; there the growth depended on how many requests the gateway's first read took (one of
// the client's 33 KB chunks, or two), which made it bimodal. Here the requests go in one send,
// so that the first read holds as many as it can.
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "kv_runtime_test_support.h"
#include "server_process_test_support.h"

namespace kv::testing {
namespace {

using namespace std::chrono_literals;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// ASan's quarantine and TSan's shadow memory count in RSS (clients/CMakeLists.txt says how much).
constexpr bool kRssIsTheProgramsOwn = false;
#else
constexpr bool kRssIsTheProgramsOwn = true;
#endif

constexpr std::size_t kValueBytes = 100 * 1024;
// 2,000 requests (66 KB, more than the gateway's 64 KiB read) ask for 200 MB of replies.
constexpr int kRequests = 2000;
// The output mark (4 MB) and one window of replies (about as much) in the gateway, the
// messages carrying that window, the kernel's share of the socket's queue outside RSS: well
// under this. An unbounded gateway answers every request it read, 100 MB or more.
constexpr long kMaxGrowthKb = 64 * 1024;

long rss_kb(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// The highest RSS of `pid`, sampled until it has not risen for `quiet` (or `limit` passed): a
// server answering requests into an unbounded queue keeps rising until it has answered them all.
long peak_rss_kb(pid_t pid, std::chrono::milliseconds quiet, std::chrono::seconds limit) {
  const auto start = std::chrono::steady_clock::now();
  long peak = rss_kb(pid);
  auto last_rise = start;
  for (auto now = start; now - last_rise < quiet && now - start < limit; now = std::chrono::steady_clock::now()) {
    std::this_thread::sleep_for(10ms);
    if (const long rss = rss_kb(pid); rss > peak) {
      peak = rss;
      last_rise = std::chrono::steady_clock::now();
    }
  }
  return peak;
}

TEST(SlowClient, ARequestBacklogAlreadyReadWaitsWhileTheClientDoesNotRead) {
  TempDir data;
  TempDir logs;
  ServerProcess server(data.path(), logs.path());
  ASSERT_TRUE(server.started());
  ASSERT_TRUE(server.wait_ready()) << server.err();
  Client client(server.port());
  ASSERT_TRUE(client.connected());
  ASSERT_EQ(client.command({"SET", "bigkey", std::string(kValueBytes, 'v')}), "+OK\r\n");
  ASSERT_EQ(client.command({"PING"}), "+PONG\r\n");  // the server's allocations for a reply exist
  const long before_kb = rss_kb(server.pid());
  ASSERT_GT(before_kb, 0);

  const int slow = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(slow, 0);
  const int small = 4096;  // the kernel keeps little of what the server writes on this side
  ::setsockopt(slow, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(server.port());
  ASSERT_EQ(::connect(slow, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  std::string requests;
  for (int i = 0; i < kRequests; ++i) requests += "*2\r\n$3\r\nGET\r\n$6\r\nbigkey\r\n";
  for (std::size_t sent = 0; sent < requests.size();) {
    const ssize_t n = ::send(slow, requests.data() + sent, requests.size() - sent, MSG_NOSIGNAL);
    ASSERT_GT(n, 0) << "the server stopped taking requests before it could hold the first read's";
    sent += static_cast<std::size_t>(n);
  }

  const long peak_kb = peak_rss_kb(server.pid(), 1s, 20s);
  RecordProperty("rss_growth_kb", std::to_string(peak_kb - before_kb));
  if (kRssIsTheProgramsOwn) {
    EXPECT_LT(peak_kb - before_kb, kMaxGrowthKb) << "RSS " << before_kb << " kB before, peak " << peak_kb << " kB";
  }
  EXPECT_EQ(client.command({"PING"}), "+PONG\r\n") << "another client waits for the slow one";

  // Reading drains the queue (on_drained), and that must take up the requests held back.
  const std::string reply = "$" + std::to_string(kValueBytes) + "\r\n" + std::string(kValueBytes, 'v') + "\r\n";
  timeval timeout{};
  timeout.tv_sec = kPatience.count();
  ::setsockopt(slow, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string in;
  int replies = 0;
  bool intact = true;
  char buffer[1 << 16];
  while (replies < kRequests) {
    const ssize_t n = ::recv(slow, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    in.append(buffer, static_cast<std::size_t>(n));
    std::size_t at = 0;
    for (; in.size() - at >= reply.size(); at += reply.size(), ++replies) {
      intact = intact && in.compare(at, reply.size(), reply) == 0;
    }
    in.erase(0, at);
  }
  EXPECT_EQ(replies, kRequests);
  EXPECT_TRUE(intact) << "a reply was not the value";
  ::close(slow);
  EXPECT_EQ(client.command({"PING"}), "+PONG\r\n");
  EXPECT_EQ(server.terminate(), 0) << server.err();
}

}  // namespace
}  // namespace kv::testing
