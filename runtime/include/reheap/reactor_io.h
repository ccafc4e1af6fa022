// The values a reactor's timers and sockets are named and answered by.
//
// A reactor names its timers (Reactor::start_timer, on_timer) and its sockets (listen, connect,
// on_accept, on_data, ...) by ids it mints itself, counting up from 1; they are saved with its heap
// and mean something to that reactor only. A write answers with a WriteResult. The event that
// carries them (event.h), the reactor's operations (reactor.h) and the recording of both
// (recording_log.h) share this one declaration.
#pragma once

#include <cstdint>

namespace reheap {

using TimerId = std::uint64_t;
using SocketId = std::uint64_t;

// What Reactor::write did. `written`: the bytes were taken (sent, or queued to be sent).
// `above_high_water`: the socket's queue of bytes the kernel has not taken yet is above its
// high-water mark (Reactor::set_write_high_water): the reactor should stop producing output for
// it (pause reading, say) until on_drained. Converts to `written`, so `if (!write(...))` asks
// whether the bytes were taken.
struct WriteResult {
  bool written = false;
  bool above_high_water = false;
  constexpr operator bool() const noexcept { return written; }  // NOLINT: implicit on purpose
};

}  // namespace reheap
