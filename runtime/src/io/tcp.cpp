// TCP for reactors (see tcp.h).
#include "io/tcp.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "io/tcp_socket.h"
#include "reactor/reactor_access.h"
#include "reheap/heap_scope.h"
#include "runtime_impl.h"
#include "scheduling/worker.h"

namespace reheap::detail {

namespace {

std::error_code uv_error(int status) noexcept {
  if (status == UV_EOF || status == 0) return {};
  return {-status, std::system_category()};
}

[[noreturn]] void throw_uv(int status, const std::string& what) {
  HeapScope system(nullptr);
  throw std::system_error(-status, std::system_category(), what);
}

bool current_owner(const TcpSocket* s) noexcept {
  return s->cell->id.load(std::memory_order_relaxed) == s->owner;
}

// Closes the socket's handle; the reactor can no longer use it. It stays in the cell's map until
// the close completes (on_handle_closed): its handle is still on this worker's loop, so a move
// waits for it (tcp_move.cpp), and on_closed, if owed, is delivered on this loop.
void drop(TcpSocket* s, bool notify_on_close);

void on_alloc(uv_handle_t* h, std::size_t, uv_buf_t* buf) {
  Worker& w = worker_of(h);
  buf->base = w.read_buffer();
  buf->len = Worker::kReadBufferSize;
}

void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);

}  // namespace

void on_handle_closed(uv_handle_t* h) {
  auto* s = static_cast<TcpSocket*>(h->data);
  if (s->listen_fd >= 0) ::close(s->listen_fd);
  if (s->husk) {
    // The cell moved on with this socket's descriptor and state, or was torn down: it may belong
    // to another thread by now (another worker, or a restore publishing a new occupant).
    HeapScope system(nullptr);
    delete s;
    return;
  }
  if (current_owner(s)) {
    // A closing socket stayed in the map until now (drop).
    HeapScope system(nullptr);
    const auto it = s->cell->sockets.find(s->id);
    if (it != s->cell->sockets.end() && it->second == s) s->cell->sockets.erase(it);
  }
  if (s->notify_close && current_owner(s)) {
    const SocketId id = s->id;
    worker_of(h).deliver_event(s->cell, Event{.kind = EventKind::kClosed, .socket = id, .error = s->close_error});
  }
  // A closing handle holds a move back (tcp_move.cpp); this one is gone.
  if (current_owner(s)) resume_move(worker_of(h), s->cell);
  HeapScope system(nullptr);
  delete s;
}

void resume_move(Worker& w, Cell* c) {
  if (c->move_to == nullptr || c->state != CellState::kLive) return;
  if (c->scheduled.exchange(1, std::memory_order_seq_cst) == 0) w.schedule(c);
}

// The socket failed (a write the kernel refused, or that failed in the queue): close it, and
// let the reactor hear the error when the close completes, never from inside its own write().
void fail(TcpSocket* s, std::error_code error) {
  if (s->closing) return;
  s->close_error = error;
  drop(s, true);
}

namespace {

void drop(TcpSocket* s, bool notify_on_close) {
  if (s->closing) return;
  s->closing = true;
  s->notify_close = notify_on_close;
  uv_close(handle_of(s), on_handle_closed);
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
  if (nread == UV_EOF) {
    // The peer sent everything; it may still read. The socket stays for the replies.
    uv_read_stop(stream);
    s->reading = false;
    s->ended = true;
    w.deliver_event(s->cell, Event{.kind = EventKind::kEnd, .socket = id});
    return;
  }
  // An error: the socket is gone; the reactor hears it once.
  Cell* c = s->cell;
  const std::error_code ec = uv_error(static_cast<int>(nread));
  drop(s, false);
  w.deliver_event(c, Event{.kind = EventKind::kClosed, .socket = id, .error = ec});
}

TcpSocket* new_socket(Worker& w, Cell* c, bool listener) {
  HeapScope system(nullptr);
  auto* s = new TcpSocket{};
  if (!listener) uv_tcp_init(w.loop(), &s->tcp);
  s->tcp.data = s;
  s->poll.data = s;
  s->cell = c;
  s->owner = c->id.load(std::memory_order_relaxed);
  s->id = ReactorAccess::next_socket(*c->reactor);
  s->listener = listener;
  c->sockets.emplace(s->id, s);
  return s;
}

// A descriptor kept open to be closed when the process has none left, so that the connections
// waiting on a listener can be accepted and closed (their clients hear it at once, instead of
// hanging in the backlog) and the listener does not spin on a readable socket it cannot serve.
std::atomic<int> reserve_fd{-1};

void keep_reserve() noexcept {
  if (reserve_fd.load(std::memory_order_relaxed) >= 0) return;
  const int fd = ::open("/", O_RDONLY | O_CLOEXEC);
  int none = -1;
  if (fd >= 0 && !reserve_fd.compare_exchange_strong(none, fd)) ::close(fd);
}

// Out of descriptors: spend the reserve to shed what waits on `listen_fd`, then take it back.
void shed_waiting_connections(int listen_fd) noexcept {
  const int reserve = reserve_fd.exchange(-1);
  if (reserve < 0) return;
  ::close(reserve);
  for (;;) {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      ::close(fd);
    } else if (errno != EINTR && errno != ECONNABORTED) {
      break;
    }
  }
  keep_reserve();
}

}  // namespace

void start_reading(TcpSocket* s) {
  if (s->reading || s->ended || s->closing || s->listener) return;
  if (uv_read_start(reinterpret_cast<uv_stream_t*>(&s->tcp), on_alloc, on_read) == 0) s->reading = true;
}

// The listener accepts with accept4 itself rather than through uv_listen: libuv 1.44's own
// answer to EMFILE sheds the waiting connections silently (its callback never hears of it), and
// a service must be told that it ran out of descriptors. Up to kAcceptBatch connections per
// wake-up keep one busy listener from starving the loop's other handles.
void on_listener_ready(uv_poll_t* handle, int status, int) {
  constexpr int kAcceptBatch = 64;
  auto* l = static_cast<TcpSocket*>(handle->data);
  if (l->closing || !current_owner(l) || l->cell->state != CellState::kLive) return;
  Worker& w = worker_of(reinterpret_cast<uv_handle_t*>(handle));
  Cell* c = l->cell;
  const SocketId lid = l->id;
  for (int i = 0; i < kAcceptBatch && status == 0 && !l->closing; ++i) {
    const int fd = ::accept4(l->listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      if (error == EAGAIN || error == EWOULDBLOCK) return;
      if (error == EINTR || error == ECONNABORTED) continue;
      if (error == EMFILE || error == ENFILE) shed_waiting_connections(l->listen_fd);
      status = -error;
      break;
    }
    TcpSocket* s = new_socket(w, c, false);
    if (const int rc = uv_tcp_open(&s->tcp, fd); rc != 0) {
      ::close(fd);
      drop(s, false);
      status = rc;
      break;
    }
    start_reading(s);
    const SocketId id = s->id;
    w.deliver_event(c, Event{.kind = EventKind::kAccept, .socket = lid, .connection = id});
    if (l->cell->state != CellState::kLive) return;
  }
  if (status == 0) return;
  w.runtime().accept_errors.fetch_add(1, std::memory_order_relaxed);
  w.deliver_event(c, Event{.kind = EventKind::kAcceptError, .socket = lid, .error = uv_error(status)});
}

namespace {

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
  s->connecting = false;
  if (s->closing) return;  // closed before it connected (the close reports it)
  Worker& w = worker_of(reinterpret_cast<uv_handle_t*>(&s->tcp));
  Cell* c = s->cell;
  const SocketId id = s->id;
  const std::error_code ec = uv_error(status);
  if (status == 0) {
    start_reading(s);
  } else {
    drop(s, false);
  }
  w.deliver_event(c, Event{.kind = EventKind::kConnect, .socket = id, .error = ec});
  resume_move(w, c);  // a connecting socket held a move back (tcp_move.cpp)
}

sockaddr_storage parse_address(const std::string& host, std::uint16_t port) {
  sockaddr_storage addr{};
  if (uv_ip4_addr(host.c_str(), port, reinterpret_cast<sockaddr_in*>(&addr)) == 0) return addr;
  if (uv_ip6_addr(host.c_str(), port, reinterpret_cast<sockaddr_in6*>(&addr)) == 0) return addr;
  HeapScope system(nullptr);
  throw std::system_error(EINVAL, std::generic_category(),
                          "reheap: not a numeric IPv4/IPv6 address: '" + host + "'");
}

// The socket the reactor can still use: closing ones are gone for it (drop).
TcpSocket* find(Cell* c, SocketId id) {
  auto it = c->sockets.find(id);
  return it == c->sockets.end() || it->second->closing ? nullptr : it->second;
}

void on_written(uv_write_t* req, int status) {
  auto* wr = static_cast<WriteRequest*>(req->data);
  TcpSocket* s = wr->socket;  // alive: libuv runs a handle's write callbacks before its close
  // Requests complete in the order they were queued: this one is the oldest.
  s->writes_head = wr->next;
  if (s->writes_head == nullptr) s->writes_tail = nullptr;
  std::free(wr);
  if (s->husk || s->closing || status == UV_ECANCELED) return;
  if (status < 0) {
    fail(s, uv_error(status));
    return;
  }
  if (!s->above_high_water || !current_owner(s)) return;
  if (uv_stream_get_write_queue_size(reinterpret_cast<uv_stream_t*>(&s->tcp)) != 0) return;
  s->above_high_water = false;
  const SocketId id = s->id;
  worker_of(reinterpret_cast<uv_handle_t*>(&s->tcp))
      .deliver_event(s->cell, Event{.kind = EventKind::kDrained, .socket = id});
}

}  // namespace

bool submit_write(TcpSocket* s, WriteRequest* wr) {
  wr->socket = s;
  wr->next = nullptr;
  wr->req.data = wr;
  uv_buf_t buf = uv_buf_init(wr->bytes(), static_cast<unsigned>(wr->size));
  const int rc = uv_write(&wr->req, reinterpret_cast<uv_stream_t*>(&s->tcp), &buf, 1, on_written);
  if (rc != 0) {
    std::free(wr);
    fail(s, uv_error(rc));
    return false;
  }
  if (s->writes_tail == nullptr) {
    s->writes_head = wr;
  } else {
    s->writes_tail->next = wr;
  }
  s->writes_tail = wr;
  return true;
}

namespace {

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
  const std::string what = "reheap: listen on " + host + ":" + std::to_string(port);
  const int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw_uv(-errno, what);
  // SO_REUSEADDR as libuv sets it: a restarted service binds while old connections linger.
  // SO_REUSEPORT on request (libuv 1.44 has no UV_TCP_REUSEPORT).
  const int one = 1;
  const socklen_t length = addr.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      (reuse_port && ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) ||
      ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), length) != 0 || ::listen(fd, backlog) != 0) {
    const int error = errno;
    ::close(fd);
    throw_uv(-error, what);
  }
  keep_reserve();
  TcpSocket* s = new_socket(w, c, true);
  s->listen_fd = fd;  // closed with the handle (on_handle_closed)
  if (const int rc = uv_poll_init(w.loop(), &s->poll, fd); rc != 0) {
    {
      HeapScope system(nullptr);
      c->sockets.erase(s->id);
      delete s;  // no handle was made: nothing to close but the descriptor
    }
    ::close(fd);
    throw_uv(rc, what);
  }
  if (const int rc = uv_poll_start(&s->poll, UV_READABLE, on_listener_ready); rc != 0) {
    drop(s, false);  // closes the descriptor with the handle
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
  s->connecting = true;
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
  int rc = 0;
  if (s->listener) {
    socklen_t len = sizeof addr;
    if (::getsockname(s->listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) rc = -errno;
  } else {
    int len = sizeof addr;
    rc = uv_tcp_getsockname(&s->tcp, reinterpret_cast<sockaddr*>(&addr), &len);
  }
  if (rc != 0) throw_uv(rc, "reheap: local_port");
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
}

WriteResult tcp_write(Cell* c, SocketId socket, std::span<const char> data) {
  TcpSocket* s = find(c, socket);
  if (s == nullptr || s->closing || s->listener) return {};
  auto* stream = reinterpret_cast<uv_stream_t*>(&s->tcp);
  std::size_t done = 0;
  if (uv_stream_get_write_queue_size(stream) == 0) {
    uv_buf_t buf = uv_buf_init(const_cast<char*>(data.data()), static_cast<unsigned>(data.size()));
    const int n = uv_try_write(stream, &buf, 1);
    if (n >= 0) {
      done = static_cast<std::size_t>(n);
    } else if (n != UV_EAGAIN) {
      fail(s, uv_error(n));  // EPIPE, ECONNRESET: heard as on_closed, also while not reading
      return {};
    }
  }
  if (done == data.size()) return {.written = true, .above_high_water = s->above_high_water};
  const std::size_t rest = data.size() - done;
  auto* wr = static_cast<WriteRequest*>(std::malloc(sizeof(WriteRequest) + rest));
  if (wr == nullptr) return {};
  wr->size = rest;
  std::memcpy(wr->bytes(), data.data() + done, rest);
  if (!submit_write(s, wr)) return {};
  if (uv_stream_get_write_queue_size(stream) > s->high_water) s->above_high_water = true;
  return {.written = true, .above_high_water = s->above_high_water};
}

void tcp_close(Cell* c, SocketId socket) {
  TcpSocket* s = find(c, socket);
  if (s == nullptr || s->closing) return;
  auto* stream = reinterpret_cast<uv_stream_t*>(&s->tcp);
  if (!s->listener && uv_stream_get_write_queue_size(stream) > 0) {
    close_after_flush(s);
    return;
  }
  drop(s, true);
}

void close_after_flush(TcpSocket* s) {
  // The socket stays in the cell's map until its handle is closed (on_handle_closed): it owes
  // the reactor its on_closed, a move carries it with its unsent bytes (tcp_move.cpp), and a
  // teardown must find it to close it. Reading stops: the reactor closed the socket, so no
  // on_data, and the end of the stream must not report a second close.
  auto* stream = reinterpret_cast<uv_stream_t*>(&s->tcp);
  s->closing = true;
  s->notify_close = true;
  uv_read_stop(stream);
  s->reading = false;
  auto* req = static_cast<uv_shutdown_t*>(std::malloc(sizeof(uv_shutdown_t)));
  if (req != nullptr) {
    req->data = s;
    if (uv_shutdown(req, stream, on_shutdown) == 0) return;
    std::free(req);
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&s->tcp), on_handle_closed);
}

void tcp_set_no_delay(Cell* c, SocketId socket, bool on) {
  if (TcpSocket* s = find(c, socket)) uv_tcp_nodelay(&s->tcp, on ? 1 : 0);
}

void tcp_set_reading(Cell* c, SocketId socket, bool on) {
  TcpSocket* s = find(c, socket);
  if (s == nullptr) return;
  if (on) {
    start_reading(s);
  } else if (s->reading) {
    uv_read_stop(reinterpret_cast<uv_stream_t*>(&s->tcp));
    s->reading = false;
  }
}

void tcp_set_write_high_water(Cell* c, SocketId socket, std::size_t bytes) {
  if (TcpSocket* s = find(c, socket)) s->high_water = bytes;
}

void close_sockets(Worker&, Cell* c) {
  HeapScope system(nullptr);
  while (!c->sockets.empty()) {
    TcpSocket* s = c->sockets.begin()->second;
    c->sockets.erase(c->sockets.begin());
    if (s->parked) {
      // Stopped while moving, before any loop took it: only the descriptor and bytes exist.
      ::close(s->fd);
      std::free(s->carried);
      delete s;
      continue;
    }
    // The cell is torn down (or restarts from a snapshot) before the close completes, and may be
    // reused at once, by a restore with the same reference on another thread too: the socket's
    // late callbacks touch only itself. Closing the handle cancels a flush's shutdown request
    // and its queued writes.
    s->husk = true;
    s->closing = true;
    s->notify_close = false;
    uv_handle_t* h = handle_of(s);
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
  for (const auto& [id, s] : c->sockets) {
    if (!s->closing || s->notify_close) saved.push_back(id);  // not if on_closed was heard
  }
}

bool has_sockets(const Cell* c) noexcept { return !c->sockets.empty(); }

std::size_t abort_connections(Cell* c, std::error_code error) {
  std::size_t closed = 0;
  for (const auto& [id, s] : c->sockets) {
    if (s->listener) continue;
    if (!s->closing) {
      fail(s, error);  // the socket stays in the map until its handle has closed
      ++closed;
      continue;
    }
    // Flushing after tcp_close: its descriptor is still open, and a dump must not hold it. Its
    // on_closed is owed already; it reports the abort. (A handle already closing has no descriptor.)
    uv_handle_t* h = handle_of(s);
    if (uv_is_closing(h)) continue;
    s->close_error = error;
    uv_close(h, on_handle_closed);
    ++closed;
  }
  return closed;
}

void hold_listeners(Cell* c, bool hold) {
  for (const auto& [id, s] : c->sockets) {
    if (!s->listener || s->closing || s->parked) continue;
    if (hold) {
      uv_poll_stop(&s->poll);
    } else if (const int rc = uv_poll_start(&s->poll, UV_READABLE, on_listener_ready); rc != 0) {
      fail(s, uv_error(rc));  // heard as on_closed, as any listener that fails
    }
  }
}

void drop_sockets_from(Cell* c, SocketId first) {
  for (auto it = c->sockets.lower_bound(first); it != c->sockets.end();) {
    TcpSocket* s = it->second;
    ++it;
    drop(s, false);
  }
}

}  // namespace reheap::detail
