// TCP for reactors: listeners, connections, reads and writes on the worker's libuv loop.
//
// A socket belongs to the cell that opened or accepted it (map SocketId -> TcpSocket in the
// cell, both in process memory). Reads go into the worker's one read buffer and are handed to
// on_data as a span, so bytes are copied once, by the kernel. Writes try uv_try_write first and
// copy only the part the kernel did not take into a write request.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "cell.h"

namespace reheap::detail {

class Worker;

SocketId tcp_listen(Worker& w, Cell* c, const std::string& host, std::uint16_t port,
                    bool reuse_port, int backlog);
SocketId tcp_connect(Worker& w, Cell* c, const std::string& host, std::uint16_t port);
std::uint16_t tcp_local_port(Cell* c, SocketId socket);
bool tcp_write(Cell* c, SocketId socket, std::span<const char> data);
void tcp_close(Cell* c, SocketId socket);
void tcp_set_no_delay(Cell* c, SocketId socket, bool on);
void close_sockets(Worker& w, Cell* c);    // teardown: close all, no hooks
void close_listeners(Worker& w, Cell* c);  // shutdown: stop accepting
void record_sockets(Cell* c);              // snapshot: the open ids, into the reactor's heap
bool has_sockets(const Cell* c) noexcept;

}  // namespace reheap::detail
