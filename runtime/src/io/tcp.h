// TCP for reactors: listeners, connections, reads and writes on the worker's libuv loop.
//
// A socket belongs to the cell that opened or accepted it (map SocketId -> TcpSocket in the
// cell, both in process memory). Reads go into the worker's one read buffer and are handed to
// on_data as a span, so bytes are copied once, by the kernel. Writes try uv_try_write first and
// copy only the part the kernel did not take into a write request.
//
// Backpressure and faults. The bytes queued in write requests are compared with the socket's
// high-water mark at each write (reported in WriteResult); when a queue that was reported above it
// empties, the reactor gets on_drained. Reading can be stopped and started (uv_read_stop/start).
// The peer's EOF is on_end, and the socket stays open for writing: a half-closed peer still gets
// its replies. A socket fails once, whichever side sees it first (a read error, a write the
// kernel refuses, a queued write that fails): it is closed and the reactor hears on_closed with
// the error, even while reading is paused. A failed accept (EMFILE: libuv then accepts and
// drops the pending connections with its reserve descriptor) is on_accept_error; the listener
// stays.
//
// Moves. A reactor moves with its sockets (tcp_move.cpp): between two of its events the old
// worker parks them (descriptor, unsent bytes, state) and the new worker re-opens them on its
// loop before the reactor's next event, under the same ids. No byte is lost, duplicated or
// reordered in either direction. tcp_socket.h shows the socket as both files see it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <system_error>

#include "reactor/cell.h"

namespace reheap::detail {

class Worker;

SocketId tcp_listen(Worker& w, Cell* c, const std::string& host, std::uint16_t port,
                    bool reuse_port, int backlog);
SocketId tcp_connect(Worker& w, Cell* c, const std::string& host, std::uint16_t port);
std::uint16_t tcp_local_port(Cell* c, SocketId socket);
WriteResult tcp_write(Cell* c, SocketId socket, std::span<const char> data);
void tcp_close(Cell* c, SocketId socket);
void tcp_set_no_delay(Cell* c, SocketId socket, bool on);
void tcp_set_reading(Cell* c, SocketId socket, bool on);
void tcp_set_write_high_water(Cell* c, SocketId socket, std::size_t bytes);
void close_sockets(Worker& w, Cell* c);    // teardown: close all, no hooks
void close_listeners(Worker& w, Cell* c);  // shutdown: stop accepting
void record_sockets(Cell* c);              // snapshot: the open ids, into the reactor's heap
bool has_sockets(const Cell* c) noexcept;
// A process checkpoint's close policy: closes every connection of the cell (listeners stay), each
// heard as on_closed(`error`) once the loop runs again. Returns how many it closed.
std::size_t abort_connections(Cell* c, std::error_code error);
// Moves (tcp_move.cpp). park_sockets runs on the old worker between two events; false means a
// socket cannot move now (connecting, closing, or no descriptor for a dup) and nothing changed.
// attach_sockets runs on the new worker before the reactor's next event.
bool park_sockets(Worker& w, Cell* c);
void attach_sockets(Worker& w, Cell* c);
// Exact restarts (restart.h): listeners stop accepting while the reactor's past is replayed (an
// accept mints its id in the reactor's heap), and the sockets the failing event opened, which the
// restored reactor never heard of, are closed without a hook.
void hold_listeners(Cell* c, bool hold);
void drop_sockets_from(Cell* c, SocketId first);

}  // namespace reheap::detail
