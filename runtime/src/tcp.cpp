// TCP for reactors (see tcp.h).
#include "tcp.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "reactor_access.h"
#include "reheap/heap_scope.h"
#include "worker.h"

namespace reheap::detail {

struct TcpSocket {
  uv_tcp_t tcp;
  Cell* cell;
  std::uint64_t owner;  // the cell's occupant: a recycled cell ignores late callbacks
  SocketId id;
  bool listener = false;
  bool closing = false;
  bool notify_close = false;  // deliver on_closed when the close completes
};

namespace {

struct WriteRequest {
  uv_write_t req;
  std::size_t size;
  // the bytes follow
  char* bytes() noexcept { return reinterpret_cast<char*>(this + 1); }
};

std::error_code uv_error(int status) noexcept {
  if (status == UV_EOF || status == 0) return {};
  return {-status, std::system_category()};
}

[[noreturn]] void throw_uv(int status, const std::string& what) {
  HeapScope system(nullptr);
  throw std::system_error(-status, std::system_category(), what);
}

Worker& worker_of(uv_handle_t* h) { return *static_cast<Worker*>(h->loop->data); }

bool current_owner(const TcpSocket* s) noexcept {
  return s->cell->id.load(std::memory_order_relaxed) == s->owner;
}

void on_handle_closed(uv_handle_t* h) {
  auto* s = static_cast<TcpSocket*>(h->data);
  if (current_owner(s)) {
    // A socket closed while its writes were still queued stayed in the map until now (tcp_close).
    HeapScope system(nullptr);
    const auto it = s->cell->sockets.find(s->id);
    if (it != s->cell->sockets.end() && it->second == s) s->cell->sockets.erase(it);
  }
  if (s->notify_close && current_owner(s)) {
    const SocketId id = s->id;
    worker_of(h).deliver_event(s->cell, Event{.kind = EventKind::kClosed, .socket = id});
  }
  HeapScope system(nullptr);
  delete s;
}

// Forgets the socket and closes its handle.
void drop(TcpSocket* s, bool notify_on_close) {
  if (s->closing) return;
  s->closing = true;
  s->notify_close = notify_on_close;
  {
    HeapScope system(nullptr);
    s->cell->sockets.erase(s->id);
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&s->tcp), on_handle_closed);
}

void on_alloc(uv_handle_t* h, std::size_t, uv_buf_t* buf) {
  Worker& w = worker_of(h);
  buf->base = w.read_buffer();
  buf->len = Worker::kReadBufferSize;
}

void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  auto* s = static_cast<TcpSocket*>(stream->data);
  if (nread == 0) return;  // EAGAIN
  Worker& w = worker_of(reinterpret_cast<uv_handle_t*>(stream));
  const SocketId id = s->id;
  if (nread > 0) {
    const std::span<const char> data(buf->base, static_cast<std::size_t>(nread));
    w.deliver_event(s->cell, Event{.kind = EventKind::kData, .socket = id, .data = data});
    return;
  }
  // EOF or error: the socket is gone; the reactor hears it once.
  Cell* c = s->cell;
  const std::error_code ec = uv_error(static_cast<int>(nread));
  drop(s, false);
  w.deliver_event(c, Event{.kind = EventKind::kClosed, .socket = id, .error = ec});
}

TcpSocket* new_socket(Worker& w, Cell* c, bool listener) {
  HeapScope system(nullptr);
  auto* s = new TcpSocket{};
  uv_tcp_init(w.loop(), &s->tcp);
  s->tcp.data = s;
  s->cell = c;
  s->owner = c->id.load(std::memory_order_relaxed);
  s->id = ReactorAccess::next_socket(*c->reactor);
  s->listener = listener;
  c->sockets.emplace(s->id, s);
  return s;
}

void on_connection(uv_stream_t* server, int status) {
  auto* l = static_cast<TcpSocket*>(server->data);
  if (status < 0 || !current_owner(l) || l->cell->state != CellState::kLive) return;
  Worker& w = worker_of(reinterpret_cast<uv_handle_t*>(server));
  Cell* c = l->cell;
  TcpSocket* s = new_socket(w, c, false);
  if (uv_accept(server, reinterpret_cast<uv_stream_t*>(&s->tcp)) != 0) {
    drop(s, false);
    return;
  }
  uv_read_start(reinterpret_cast<uv_stream_t*>(&s->tcp), on_alloc, on_read);
  const SocketId lid = l->id;
  const SocketId id = s->id;
  w.deliver_event(c, Event{.kind = EventKind::kAccept, .socket = lid, .connection = id});
}

struct ConnectRequest {
  uv_connect_t req;
  TcpSocket* socket;
};

void on_connected(uv_connect_t* req, int status) {
  auto* cr = static_cast<ConnectRequest*>(req->data);
  TcpSocket* s = cr->socket;
  {
    HeapScope system(nullptr);
    delete cr;
  }
  if (s->closing) return;  // closed before it connected (the close reports it)
  Worker& w = worker_of(reinterpret_cast<uv_handle_t*>(&s->tcp));
  Cell* c = s->cell;
  const SocketId id = s->id;
  const std::error_code ec = uv_error(status);
  if (status == 0) {
    uv_read_start(reinterpret_cast<uv_stream_t*>(&s->tcp), on_alloc, on_read);
  } else {
    drop(s, false);
  }
  w.deliver_event(c, Event{.kind = EventKind::kConnect, .socket = id, .error = ec});
}

sockaddr_storage parse_address(const std::string& host, std::uint16_t port) {
  sockaddr_storage addr{};
  if (uv_ip4_addr(host.c_str(), port, reinterpret_cast<sockaddr_in*>(&addr)) == 0) return addr;
  if (uv_ip6_addr(host.c_str(), port, reinterpret_cast<sockaddr_in6*>(&addr)) == 0) return addr;
  HeapScope system(nullptr);
  throw std::system_error(EINVAL, std::generic_category(),
                          "reheap: not a numeric IPv4/IPv6 address: '" + host + "'");
}

TcpSocket* find(Cell* c, SocketId id) {
  auto it = c->sockets.find(id);
  return it == c->sockets.end() ? nullptr : it->second;
}

void on_written(uv_write_t* req, int) {
  std::free(req->data);  // the WriteRequest; a failed write also surfaces as a read error
}

void on_shutdown(uv_shutdown_t* req, int) {
  auto* s = static_cast<TcpSocket*>(req->data);
  std::free(req);
  // Cancelled (status UV_ECANCELED) when a teardown closed the handle first.
  auto* h = reinterpret_cast<uv_handle_t*>(&s->tcp);
  if (!uv_is_closing(h)) uv_close(h, on_handle_closed);
}

}  // namespace

SocketId tcp_listen(Worker& w, Cell* c, const std::string& host, std::uint16_t port,
                    bool reuse_port, int backlog) {
  const sockaddr_storage addr = parse_address(host, port);
  TcpSocket* s = new_socket(w, c, true);
  const std::string what = "reheap: listen on " + host + ":" + std::to_string(port);
  int rc = 0;
  if (reuse_port) {
    // libuv 1.44 has no UV_TCP_REUSEPORT: make the socket ourselves and hand it over.
    const int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const int one = 1;
    if (fd < 0) {
      rc = -errno;
    } else if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
               ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0 ||
               ::bind(fd, reinterpret_cast<const sockaddr*>(&addr),
                      addr.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6)) !=
                   0) {
      rc = -errno;
      ::close(fd);
    } else {
      rc = uv_tcp_open(&s->tcp, fd);
      if (rc != 0) ::close(fd);
    }
  } else {
    rc = uv_tcp_bind(&s->tcp, reinterpret_cast<const sockaddr*>(&addr), 0);
  }
  if (rc == 0) rc = uv_listen(reinterpret_cast<uv_stream_t*>(&s->tcp), backlog, on_connection);
  if (rc != 0) {
    drop(s, false);
    throw_uv(rc, what);
  }
  return s->id;
}

SocketId tcp_connect(Worker& w, Cell* c, const std::string& host, std::uint16_t port) {
  const sockaddr_storage addr = parse_address(host, port);
  TcpSocket* s = new_socket(w, c, false);
  ConnectRequest* cr;
  {
    HeapScope system(nullptr);
    cr = new ConnectRequest{};
  }
  cr->req.data = cr;
  cr->socket = s;
  const int rc =
      uv_tcp_connect(&cr->req, &s->tcp, reinterpret_cast<const sockaddr*>(&addr), on_connected);
  if (rc != 0) {
    {
      HeapScope system(nullptr);
      delete cr;
    }
    drop(s, false);
    throw_uv(rc, "reheap: connect to " + host + ":" + std::to_string(port));
  }
  return s->id;
}

std::uint16_t tcp_local_port(Cell* c, SocketId socket) {
  TcpSocket* s = find(c, socket);
  if (s == nullptr) throw_uv(UV_EBADF, "reheap: local_port: no such socket");
  sockaddr_storage addr{};
  int len = sizeof addr;
  const int rc = uv_tcp_getsockname(&s->tcp, reinterpret_cast<sockaddr*>(&addr), &len);
  if (rc != 0) throw_uv(rc, "reheap: local_port");
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
}

bool tcp_write(Cell* c, SocketId socket, std::span<const char> data) {
  TcpSocket* s = find(c, socket);
  if (s == nullptr || s->closing || s->listener) return false;
  auto* stream = reinterpret_cast<uv_stream_t*>(&s->tcp);
  std::size_t done = 0;
  if (uv_stream_get_write_queue_size(stream) == 0) {
    uv_buf_t buf = uv_buf_init(const_cast<char*>(data.data()), static_cast<unsigned>(data.size()));
    const int n = uv_try_write(stream, &buf, 1);
    if (n >= 0) {
      done = static_cast<std::size_t>(n);
    } else if (n != UV_EAGAIN) {
      return false;  // the read side reports the error and the close
    }
  }
  if (done == data.size()) return true;
  const std::size_t rest = data.size() - done;
  auto* wr = static_cast<WriteRequest*>(std::malloc(sizeof(WriteRequest) + rest));
  if (wr == nullptr) return false;
  wr->size = rest;
  std::memcpy(wr->bytes(), data.data() + done, rest);
  wr->req.data = wr;
  uv_buf_t buf = uv_buf_init(wr->bytes(), static_cast<unsigned>(rest));
  if (uv_write(&wr->req, stream, &buf, 1, on_written) != 0) {
    std::free(wr);
    return false;
  }
  return true;
}

void tcp_close(Cell* c, SocketId socket) {
  TcpSocket* s = find(c, socket);
  if (s == nullptr || s->closing) return;
  auto* stream = reinterpret_cast<uv_stream_t*>(&s->tcp);
  if (!s->listener && uv_stream_get_write_queue_size(stream) > 0) {
    // Flush what is queued, then close. The socket stays in the cell's map until its handle is
    // closed (on_handle_closed): it is still open on this worker's loop and owes the reactor its
    // on_closed, so the reactor must not move to another loop meanwhile (has_sockets), and a
    // teardown must find it to close it. Reading stops: the reactor closed the socket, so no
    // on_data, and the end of the stream must not report a second close.
    s->closing = true;
    s->notify_close = true;
    uv_read_stop(stream);
    auto* req = static_cast<uv_shutdown_t*>(std::malloc(sizeof(uv_shutdown_t)));
    if (req != nullptr) {
      req->data = s;
      if (uv_shutdown(req, stream, on_shutdown) == 0) return;
      std::free(req);
    }
    uv_close(reinterpret_cast<uv_handle_t*>(&s->tcp), on_handle_closed);
    return;
  }
  drop(s, true);
}

void tcp_set_no_delay(Cell* c, SocketId socket, bool on) {
  if (TcpSocket* s = find(c, socket)) uv_tcp_nodelay(&s->tcp, on ? 1 : 0);
}

void close_sockets(Worker&, Cell* c) {
  while (!c->sockets.empty()) {
    TcpSocket* s = c->sockets.begin()->second;
    if (!s->closing) {
      drop(s, false);
      continue;
    }
    // Still flushing after tcp_close: forget it and close the handle now, which cancels the
    // shutdown request and the queued writes.
    {
      HeapScope system(nullptr);
      c->sockets.erase(c->sockets.begin());
    }
    s->notify_close = false;
    auto* h = reinterpret_cast<uv_handle_t*>(&s->tcp);
    if (!uv_is_closing(h)) uv_close(h, on_handle_closed);
  }
}

void close_listeners(Worker&, Cell* c) {
  for (auto it = c->sockets.begin(); it != c->sockets.end();) {
    TcpSocket* s = it->second;
    ++it;
    if (s->listener) drop(s, true);
  }
}

void record_sockets(Cell* c) {
  auto& saved = ReactorAccess::saved_sockets(*c->reactor);
  saved.clear();
  for (const auto& [id, s] : c->sockets) saved.push_back(id);
}

bool has_sockets(const Cell* c) noexcept { return !c->sockets.empty(); }

}  // namespace reheap::detail
