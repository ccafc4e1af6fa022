// Test support for the kv tests that run the real reheap-kv binary (KV_SERVER_BINARY): a server
// process on a free loopback port with its output in files (killed by its destructor if a test
// fails before it stops), a blocking RESP2 client, and the steps the start-up tests share (save a
// set, check its values, expect a refused start, list a directory's files with their bytes).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "kv_runtime_test_support.h"

extern char** environ;

namespace kv::testing {

inline std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  std::uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

// One run of the server. The destructor kills it if it still runs (a failed test).
class ServerProcess {
 public:
  // `extra` goes after the standard arguments; `environment` ("NAME=value") after the test's own.
  ServerProcess(const std::filesystem::path& dir, const std::filesystem::path& logs, std::vector<std::string> extra = {},
                std::vector<std::string> environment = {})
      : port_(free_port()), out_(logs / ("out-" + std::to_string(port_))), err_(logs / ("err-" + std::to_string(port_))) {
    std::vector<std::string> args = {KV_SERVER_BINARY, "--port", std::to_string(port_), "--dir", dir.string(),
                                     "--save", ""};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // The test's environment, less the names `environment` sets (getenv takes the first).
    std::vector<char*> envp;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view entry = *e;
      const bool replaced = std::any_of(environment.begin(), environment.end(), [&](const std::string& mine) {
        return entry.substr(0, entry.find('=') + 1) == std::string_view(mine).substr(0, mine.find('=') + 1);
      });
      if (!replaced) envp.push_back(*e);
    }
    for (std::string& e : environment) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~ServerProcess() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      int ignored = 0;
      ::waitpid(pid_, &ignored, 0);
    }
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  std::uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  bool started() const { return pid_ > 0 && port_ != 0; }
  std::string out() const { return read_text(out_); }
  std::string err() const { return read_text(err_); }

  // Waits until it says "ready" (true) or exits (false).
  bool wait_ready() {
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (std::chrono::steady_clock::now() < deadline) {
      if (out().find(" ready on ") != std::string::npos) return true;
      if (poll_exit()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  // Waits for it to exit; its exit status, or -1 (killed by a signal, or still running at the
  // deadline: then it is killed).
  int wait_exit() {
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (!poll_exit() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!status_) return -1;
    return WIFEXITED(*status_) ? WEXITSTATUS(*status_) : -1;
  }
  int terminate() {
    if (!status_) ::kill(pid_, SIGTERM);
    return wait_exit();
  }

 private:
  bool poll_exit() {
    if (status_) return true;
    int status = 0;
    if (pid_ <= 0 || ::waitpid(pid_, &status, WNOHANG) != pid_) return false;
    status_ = status;
    return true;
  }

  std::uint16_t port_;
  std::filesystem::path out_;
  std::filesystem::path err_;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// The length of the complete RESP2 reply at the front of `in`, or 0 if it is not complete yet.
inline std::size_t reply_length(std::string_view in) {
  const std::size_t eol = in.find("\r\n");
  if (eol == std::string_view::npos) return 0;
  if (in[0] == '$') {
    const long n = std::stol(std::string(in.substr(1, eol - 1)));
    if (n < 0) return eol + 2;
    const std::size_t total = eol + 2 + static_cast<std::size_t>(n) + 2;
    return in.size() >= total ? total : 0;
  }
  if (in[0] == '*') {
    const long n = std::stol(std::string(in.substr(1, eol - 1)));
    std::size_t at = eol + 2;
    for (long i = 0; i < n; ++i) {
      const std::size_t part = reply_length(in.substr(at));
      if (part == 0) return 0;
      at += part;
    }
    return at;
  }
  return eol + 2;
}

// A blocking RESP2 client with a receive timeout.
class Client {
 public:
  explicit Client(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    timeval timeout{};
    timeout.tv_sec = kPatience.count();
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  }
  ~Client() { ::close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  bool connected() const { return connected_; }

  std::string command(const std::vector<std::string>& args) {
    std::string request = "*" + std::to_string(args.size()) + "\r\n";
    for (const std::string& a : args) request += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    for (std::size_t done = 0; done < request.size();) {
      const ssize_t n = ::send(fd_, request.data() + done, request.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return "<send failed>";
      done += static_cast<std::size_t>(n);
    }
    for (;;) {
      if (const std::size_t length = input_.empty() ? 0 : reply_length(input_); length != 0) {
        std::string reply = input_.substr(0, length);
        input_.erase(0, length);
        return reply;
      }
      char buffer[4096];
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) return "<connection closed or timed out>";
      input_.append(buffer, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_;
  bool connected_ = false;
  std::string input_;
};

// The keys the start-up tests write, and their values in a given round of writes.
inline constexpr int kKeys = 32;
inline std::string key(int i) { return "key:" + std::to_string(i); }
inline std::string value(int i, const std::string& round) { return round + "-value-" + std::to_string(i); }

struct Dirs {
  TempDir data;
  TempDir logs;
};

// Starts a server on `dir` (with `extra` arguments), writes kKeys keys of `round`, saves, and
// stops it.
inline void save_a_set(const std::filesystem::path& dir, const std::filesystem::path& logs, const std::string& round,
                       std::vector<std::string> extra = {}, std::vector<std::string> environment = {}) {
  ServerProcess server(dir, logs, std::move(extra), std::move(environment));
  ASSERT_TRUE(server.started());
  ASSERT_TRUE(server.wait_ready()) << server.err();
  Client client(server.port());
  ASSERT_TRUE(client.connected());
  for (int i = 0; i < kKeys; ++i) ASSERT_EQ(client.command({"SET", key(i), value(i, round)}), "+OK\r\n");
  ASSERT_EQ(client.command({"SAVE"}), "+OK\r\n");
  EXPECT_EQ(server.terminate(), 0) << server.err();
}

// Every key of `round` is served, and nothing else is there.
inline void expect_values(std::uint16_t port, const std::string& round) {
  Client client(port);
  ASSERT_TRUE(client.connected());
  EXPECT_EQ(client.command({"DBSIZE"}), ":" + std::to_string(kKeys) + "\r\n");
  for (int i = 0; i < kKeys; ++i) {
    const std::string v = value(i, round);
    EXPECT_EQ(client.command({"GET", key(i)}), "$" + std::to_string(v.size()) + "\r\n" + v + "\r\n");
  }
}

// A start that refuses: exit status 1, no "ready"; returns its stderr.
inline std::string refused_start(const std::filesystem::path& dir, const std::filesystem::path& logs,
                                 std::vector<std::string> environment = {}) {
  ServerProcess server(dir, logs, {}, std::move(environment));
  EXPECT_TRUE(server.started());
  EXPECT_FALSE(server.wait_ready()) << server.out();
  EXPECT_EQ(server.wait_exit(), 1);
  return server.err();
}

// The start refuses: exit status 1, no "ready", and stderr names `file`, says `reason` and how
// to start anyway.
inline void expect_refused(const std::filesystem::path& dir, const std::filesystem::path& logs,
                           const std::filesystem::path& file, const std::string& reason) {
  const std::string err = refused_start(dir, logs);
  EXPECT_NE(err.find(file.string()), std::string::npos) << "stderr does not name " << file << ":\n" << err;
  EXPECT_NE(err.find(reason), std::string::npos) << "stderr does not say '" << reason << "':\n" << err;
  EXPECT_NE(err.find("--ignore-bad-snapshot"), std::string::npos) << err;
}

// Every regular file of `dir` (not its subdirectories), by name, with its bytes.
inline std::map<std::string, std::string> files_of(const std::filesystem::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) files[entry.path().filename().string()] = read_text(entry.path());
  }
  return files;
}

}  // namespace kv::testing
