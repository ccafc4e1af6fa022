// ReservedPort: what `--port 0` means for a server whose every worker listens on the port with
// SO_REUSEPORT. Each worker binding port 0 would get a port of its own, and clients would reach
// one worker only; the server has to pick one port first. A socket bound to port 0 with
// SO_REUSEPORT, and never listening, learns the kernel's choice and holds the port for the
// workers' listeners: a socket that does not listen is given no connection, so it may stay open
// for the server's life. A non-zero port is taken as it is, with no socket.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <system_error>

namespace examples {

class ReservedPort {
 public:
  // `host`: a numeric IPv4 or IPv6 address, as the servers' --host takes. Throws
  // std::system_error naming the address when the port cannot be bound.
  ReservedPort(const std::string& host, std::uint16_t port) : port_(port) {
    if (port != 0) return;
    sockaddr_storage address{};
    socklen_t length = 0;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
    if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
      v4->sin_family = AF_INET;
      length = sizeof *v4;
    } else if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
      v6->sin6_family = AF_INET6;
      length = sizeof *v6;
    } else {
      throw std::system_error(EINVAL, std::generic_category(), "not a numeric address: " + host);
    }
    fd_ = ::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int on = 1;
    if (fd_ < 0 || ::setsockopt(fd_, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0 ||
        ::bind(fd_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      const int error = errno;
      if (fd_ >= 0) ::close(fd_);
      throw std::system_error(error, std::generic_category(), "cannot pick a port on " + host);
    }
    port_ = ntohs(address.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
  }
  ~ReservedPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  ReservedPort(const ReservedPort&) = delete;
  ReservedPort& operator=(const ReservedPort&) = delete;

  std::uint16_t port() const noexcept { return port_; }

 private:
  int fd_ = -1;
  std::uint16_t port_;
};

}  // namespace examples
