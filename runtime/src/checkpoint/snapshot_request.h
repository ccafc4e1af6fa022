// Snapshot requests inside the runtime (the public side is reheap/snapshot_request.h).
//
// A request is a SystemMessage::kSnapshot envelope whose payload is a SnapshotRequest followed by
// the file name's bytes, all in the message allocator: it costs the target's heap nothing, and a
// request dropped anywhere is freed like any envelope. Every place that drops envelopes without
// handling them (a stopping reactor's teardown, a recycled cell's drain, a message for an earlier
// occupant) calls abandon_system_message (mailbox_command.h), which calls
// abandon_if_snapshot_request: that is what makes "every request is answered" hold; only the shutdown's final sweep, after every reactor is gone, answers nothing.
#pragma once

#include <cstdint>
#include <filesystem>

#include "messaging/envelope.h"
#include "reactor/cell.h"
#include "reheap/snapshot_request.h"

namespace reheap::detail {

class RuntimeImpl;

struct SnapshotRequest {
  RuntimeImpl* runtime;  // to answer from wherever the envelope is dropped
  std::uint64_t requester;
  SnapshotRequestId id;
  std::uint32_t file_size;  // bytes of the file name, which follow this header
  SnapshotKind kind;
};

// The requester's worker, in one of its hooks: sends the request to `target`, or answers at once
// when the send fails.
void send_snapshot_request(Cell* requester, SnapshotRequestId id, ActorRef target,
                           const std::filesystem::path& file, SnapshotKind kind) noexcept;

// The target's worker, between two of its events: saves and answers.
void run_snapshot_request(Cell* target, const Envelope& e) noexcept;

// Any thread: if `e` is a snapshot request that will never run, answers kTargetStopped.
void abandon_if_snapshot_request(const Envelope& e) noexcept;

}  // namespace reheap::detail
