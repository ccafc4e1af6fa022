// TcpSocket: one socket of a reactor, as tcp.cpp (its life on one loop) and tcp_move.cpp (its
// move to another worker's loop) share it. See tcp.h for the design.
//
// A socket is in one of three places:
//   attached  its handle (uv_tcp_t for a connection, uv_poll_t on listen_fd for a listener) is
//             open on the loop of the cell's worker, and the cell's map points to it;
//   parked    the cell is moving: the map points to a socket attached to no loop, which holds the
//             descriptor (`fd`) and the bytes libuv had not sent yet (`carried`) until the new
//             worker attaches it (tcp_move.cpp);
//   a husk    the old socket object a move left behind, or one a teardown closed: its handle
//             closes on its loop, and its callbacks (cancelled writes, the close) free only
//             itself, never touching the cell, which may belong to another thread by then.
// The socket's id stays the same through a move; only the map's pointer changes.
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <system_error>

#include "reactor/cell.h"

namespace reheap::detail {

class Worker;
struct TcpSocket;

// A write the kernel did not take at once: libuv sends it from `bytes()` and calls on_written.
// A socket keeps its requests in order (head to tail), so that a move can tell which of the
// queued bytes were not sent yet.
struct WriteRequest {
  uv_write_t req;
  TcpSocket* socket;
  WriteRequest* next;
  std::size_t size;
  // the bytes follow
  char* bytes() noexcept { return reinterpret_cast<char*>(this + 1); }
};

struct TcpSocket {
  uv_tcp_t tcp;    // a connection's handle
  uv_poll_t poll;  // a listener's: it accepts itself (on_listener_ready says why)
  int listen_fd = -1;
  Cell* cell;
  std::uint64_t owner;  // the cell's occupant: a recycled cell ignores late callbacks
  SocketId id;
  bool listener = false;
  bool closing = false;
  bool notify_close = false;  // deliver on_closed when the close completes
  bool reading = false;       // uv_read_start is in effect (parked: restart it on arrival)
  bool ended = false;         // the peer's EOF arrived (on_end)
  bool above_high_water = false;  // a write reported it: on_drained is owed when the queue empties
  bool connecting = false;    // uv_tcp_connect has not called back: the socket cannot move yet
  bool parked = false;        // moving: on no loop; `fd` and `carried` wait for the new worker
  bool husk = false;          // left by a move or a teardown: its callbacks touch only itself
  std::size_t high_water = Reactor::kDefaultWriteHighWater;
  std::error_code close_error;  // what on_closed reports when the close completes
  WriteRequest* writes_head = nullptr;  // queued in libuv, oldest first
  WriteRequest* writes_tail = nullptr;
  int fd = -1;                       // parked: the descriptor the new loop opens
  WriteRequest* carried = nullptr;   // parked: the bytes libuv had not sent, to queue first
};

inline Worker& worker_of(uv_handle_t* h) noexcept { return *static_cast<Worker*>(h->loop->data); }

inline uv_handle_t* handle_of(TcpSocket* s) noexcept {
  return s->listener ? reinterpret_cast<uv_handle_t*>(&s->poll) : reinterpret_cast<uv_handle_t*>(&s->tcp);
}

void on_handle_closed(uv_handle_t* h);
void on_listener_ready(uv_poll_t* handle, int status, int events);
void start_reading(TcpSocket* s);
// Queues `wr` (filled, size set) on the socket's handle; on failure frees it and fails the socket.
bool submit_write(TcpSocket* s, WriteRequest* wr);
// The reactor closed a connection that still has bytes to send: send them, then close, then
// on_closed. Reading stops.
void close_after_flush(TcpSocket* s);
// The socket failed: it closes, and the reactor hears on_closed(error) when the close completes.
void fail(TcpSocket* s, std::error_code error);
// A socket that held a move back (connecting, or its handle closing) is done: if a move waits,
// let the cell's next turn make it.
void resume_move(Worker& w, Cell* c);

}  // namespace reheap::detail
