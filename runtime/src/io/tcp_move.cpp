// Moving a reactor's sockets to another worker's loop (see tcp.h and tcp_socket.h).
//
// A libuv handle belongs to one loop and cannot be re-parented, so a move re-opens each socket:
// between two of the reactor's events the old worker parks its sockets (park_sockets) and the
// new worker attaches them before the reactor's next event (attach_sockets). What crosses is the
// descriptor and the socket's runtime state; the socket keeps its id.
//
// Bytes. Data the kernel has buffered for reading stays in the kernel: reading stops on the old
// handle and starts on the new one, so nothing is read twice or skipped. Bytes the reactor wrote
// that libuv had not sent yet are copied out in order and queued first on the new handle; the
// old handle's requests are then cancelled by its close and free themselves. Which bytes are
// unsent follows from libuv's count of queued bytes (uv_stream_get_write_queue_size, which
// drops as the kernel takes bytes) and the socket's own list of its requests, oldest first:
// the unsent bytes are the last `queued` bytes of that list. A request that failed on the old
// loop keeps its bytes in that count until its callback (which the husk ignores), so they are
// carried too: the new loop's write of them fails the same way and the reactor hears on_closed
// once, there.
//
// Descriptors. uv_close of a uv_tcp_t closes its descriptor, so a connection is dup'ed first and
// the new loop opens the copy; closing the old one also removes it from the old loop's epoll set
// (libuv does EPOLL_CTL_DEL before closing). A listener's handle is a uv_poll_t, which never
// closes the descriptor: its descriptor moves as it is. The EMFILE reserve descriptor (tcp.cpp)
// is per process and does not move.
//
// A socket that cannot be carried holds the move back: one still connecting (libuv would cancel
// the connect) and one whose handle is already closing (it owes the reactor on_closed on this
// loop). The reactor then stays where it is and moves at its first turn after the connect or
// the close completes (resume_move). If a dup fails (no descriptors left), nothing is touched
// and the move is tried again at the reactor's next turn.
#include <fcntl.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "io/tcp.h"
#include "io/tcp_socket.h"
#include "reheap/heap_scope.h"
#include "scheduling/worker.h"

namespace reheap::detail {
namespace {

bool carriable(TcpSocket* s) noexcept {
  return s->parked || (!s->connecting && !uv_is_closing(handle_of(s)));
}

// The bytes of `s`'s queued requests that the kernel has not taken, in order, as one request
// (null if none, or if out of memory, which the caller treats as a failed move).
WriteRequest* unsent_bytes(TcpSocket* s, bool* out_of_memory) {
  const std::size_t queued = uv_stream_get_write_queue_size(reinterpret_cast<uv_stream_t*>(&s->tcp));
  *out_of_memory = false;
  if (queued == 0) return nullptr;
  std::size_t total = 0;
  for (WriteRequest* wr = s->writes_head; wr != nullptr; wr = wr->next) total += wr->size;
  auto* carried = static_cast<WriteRequest*>(std::malloc(sizeof(WriteRequest) + queued));
  if (carried == nullptr) {
    *out_of_memory = true;
    return nullptr;
  }
  carried->size = queued;
  // Requests libuv completed but has not called back for are at the head; their bytes, and the
  // part of the first unfinished request the kernel took, are the `total - queued` to skip.
  std::size_t skip = total > queued ? total - queued : 0;
  char* out = carried->bytes();
  for (WriteRequest* wr = s->writes_head; wr != nullptr; wr = wr->next) {
    if (skip >= wr->size) {
      skip -= wr->size;
      continue;
    }
    const std::size_t n = wr->size - skip;
    std::memcpy(out, wr->bytes() + skip, n);
    out += n;
    skip = 0;
  }
  return carried;
}

}  // namespace

bool park_sockets(Worker&, Cell* c) {
  HeapScope system(nullptr);
  std::vector<TcpSocket*> moving;
  for (const auto& [id, s] : c->sockets) {
    if (!carriable(s)) return false;
    if (!s->parked) moving.push_back(s);
  }
  if (moving.empty()) return true;
  // Everything that can fail comes first, so that a refused move leaves every socket as it was.
  std::vector<TcpSocket*> parked(moving.size(), nullptr);
  bool ok = true;
  for (std::size_t i = 0; i < moving.size() && ok; ++i) {
    TcpSocket* s = moving[i];
    auto* p = new TcpSocket{};
    parked[i] = p;
    if (s->listener) {
      p->fd = s->listen_fd;
      continue;
    }
    uv_os_fd_t fd = -1;
    if (uv_fileno(handle_of(s), &fd) != 0 || (p->fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
      ok = false;
      break;
    }
    bool out_of_memory = false;
    p->carried = unsent_bytes(s, &out_of_memory);
    ok = !out_of_memory;
  }
  if (!ok) {
    for (std::size_t i = 0; i < moving.size(); ++i) {
      TcpSocket* p = parked[i];
      if (p == nullptr) break;
      if (!moving[i]->listener && p->fd >= 0) ::close(p->fd);
      std::free(p->carried);
      delete p;
    }
    return false;
  }
  for (std::size_t i = 0; i < moving.size(); ++i) {
    TcpSocket* s = moving[i];
    TcpSocket* p = parked[i];
    p->cell = s->cell;
    p->owner = s->owner;
    p->id = s->id;
    p->listener = s->listener;
    p->closing = s->closing;  // tcp_close is flushing: the new loop finishes the flush and closes
    p->notify_close = s->notify_close;
    p->reading = s->reading;
    p->ended = s->ended;
    p->above_high_water = s->above_high_water;
    p->high_water = s->high_water;
    p->close_error = s->close_error;
    p->parked = true;
    // The husk closes on this loop. Its listener descriptor went to `p`, so the close must not
    // close it; a connection's handle closes its own descriptor, not the dup.
    if (s->listener) s->listen_fd = -1;
    s->husk = true;
    s->closing = true;
    s->notify_close = false;
    uv_close(handle_of(s), on_handle_closed);
    c->sockets[p->id] = p;
  }
  return true;
}

void attach_sockets(Worker& w, Cell* c) {
  HeapScope system(nullptr);  // the lists below are the runtime's (the hooks set their own heap)
  std::vector<TcpSocket*> arriving;
  for (const auto& [id, s] : c->sockets) {
    if (s->parked) arriving.push_back(s);
  }
  // Events are delivered after every socket is attached: a hook may open, close or write to any
  // of them.
  std::vector<Event> owed;
  for (TcpSocket* s : arriving) {
    s->parked = false;
    const int fd = s->fd;
    s->fd = -1;
    if (s->listener) {
      int rc = uv_poll_init(w.loop(), &s->poll, fd);
      s->poll.data = s;
      if (rc == 0) {
        s->listen_fd = fd;  // closed with the handle from now on
        rc = uv_poll_start(&s->poll, UV_READABLE, on_listener_ready);
        if (rc != 0) fail(s, {-rc, std::system_category()});
        continue;
      }
      // No handle was made: nothing to close but the descriptor; the reactor hears it.
      ::close(fd);
      c->sockets.erase(s->id);
      owed.push_back(Event{.kind = EventKind::kClosed, .socket = s->id, .error = {-rc, std::system_category()}});
      delete s;
      continue;
    }
    uv_tcp_init(w.loop(), &s->tcp);
    s->tcp.data = s;
    if (const int rc = uv_tcp_open(&s->tcp, fd); rc != 0) {
      ::close(fd);
      std::free(s->carried);
      s->carried = nullptr;
      s->closing = false;
      fail(s, {-rc, std::system_category()});
      continue;
    }
    // The unsent bytes go first, ahead of anything the reactor writes from now on. A socket that
    // was flushing before its close counts as open until then (a failed write must close it).
    const bool flushing = s->closing;
    s->closing = false;
    WriteRequest* carried = s->carried;
    s->carried = nullptr;
    if (carried != nullptr && !submit_write(s, carried)) continue;
    if (flushing) {
      close_after_flush(s);
      continue;
    }
    if (s->reading) {
      s->reading = false;
      start_reading(s);
    }
    // The old loop would have reported the drain when the last request called back; that
    // callback was the husk's, so the drain is reported here.
    if (s->above_high_water && carried == nullptr) {
      s->above_high_water = false;
      owed.push_back(Event{.kind = EventKind::kDrained, .socket = s->id});
    }
  }
  for (const Event& e : owed) {
    if (c->state != CellState::kLive) break;
    w.deliver(c, e);
    w.after_hook(c);
  }
}

}  // namespace reheap::detail
