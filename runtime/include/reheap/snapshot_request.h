// Snapshot requests: a reactor asks for a snapshot of itself or of another reactor without
// blocking, and hears the outcome as a SnapshotDone message.
//
// Runtime::snapshot blocks its caller until the file is written, so a reactor cannot call it (its
// worker would wait for itself, or for a worker that waits for it). Reactor::request_snapshot
// returns at once with a request id; the outcome arrives later in the requester's mailbox as an
// ordinary msgpack message of type SnapshotDone, handled like any other (handle<&R::fn>()).
//
// How a request travels. The request is a system message sent from the requester to the target
// through the target's mailbox, so it obeys the mailbox's ordering: the snapshot holds the effect
// of every message the requester sent the target before the request, and of none it sent after.
// Like a stop, it is never refused or shed by a bounded mailbox.
// The target's worker saves the heap when it reaches the request, between two of the target's
// events, exactly as Runtime::snapshot does; then it sends SnapshotDone to the requester in the
// target's name (Reactor::sender() is the target), after any message the target sent before.
//
// Where the file I/O runs, and what it costs. On the target's worker, between its events: the
// target is paused for the save, as with the blocking call, and so is whatever else waits on that
// worker. The requester is not: it keeps handling messages while the save runs, unless it shares
// the target's worker (then the save is one more event of that worker, as long as a handler of
// the target that writes the file; no worker ever waits for another). A copy-then-write scheme
// (copy the pages between events, write them on another thread) was rejected: the copy costs as
// much memory as the heap, and the chain logic of Snapshotter (crash-safe rename, refusal to
// overwrite an ancestor, keeping tracked writes when a save fails) is bound to the file written.
//
// Chains: requests share the target's Snapshotter with Runtime::snapshot and
// Runtime::snapshot_increment, and with kRestart's choice of the newest file: an increment
// requested after any full save of the target (blocking or not) builds on it.
//
// Every request is answered exactly once. An answer nobody can receive (the requester has stopped,
// its bounded kReject mailbox is full, or the shutdown is stopping every reactor) is a dead letter,
// counted in RuntimeStats::dead_letters; nothing of it is kept. The statuses:
//   kSaved           the file holds the target's heap; the SnapshotInfo fields say what was written
//   kSnapshotError   the save failed: `error_code` is the SnapshotErrc (kIo for a bad path, kNoSpace
//                    for a full disk, kMisuse for an increment over a file of its own chain, ...),
//                    `error` the message; the previous file of that name is intact
//   kNoSuchReactor   the target named no live reactor when the request was made
//   kTargetStopped   the target stopped (or failed under kStop) before it reached the request (one
//                    restarted in place under kRestart keeps its mailbox: the request runs on it)
//   kShuttingDown    the runtime refused the request: it is shutting down
//   kFailed          anything else (the message allocator or memory exhausted): `error` says what
// Concurrent requests for one target, from one requester or several, run one after the other in
// the target's mailbox order, and each is answered. A self-snapshot (target == self()) is taken
// after the current hook returns and after the messages already in the requester's mailbox.
//
// Request ids count from 1 per requester and live in its heap (like TimerId), so a restored
// reactor continues its own numbering. A reactor restarted in place from an older snapshot
// (SupervisionPolicy::kRestart) may still receive the answers to requests its failed incarnation
// made after that snapshot, with ids it will issue again; match the file too if that matters.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include <msgpack.hpp>

#include "reheap/actor_ref.h"
#include "reheap/snapshot.h"
#include "reheap/snapshot_error.h"
#include "reheap/snapshot_file.h"

namespace reheap {

using SnapshotRequestId = std::uint64_t;

enum class SnapshotStatus : std::uint8_t {
  kSaved = 0,
  kSnapshotError = 1,
  kNoSuchReactor = 2,
  kTargetStopped = 3,
  kShuttingDown = 4,
  kFailed = 5,
};

const char* to_string(SnapshotStatus s) noexcept;

// The answer to Reactor::request_snapshot (see above for each status).
struct SnapshotDone {
  // The type id is a hash of this name: the same in every build, whatever the compiler.
  static constexpr std::string_view reheap_message_name = "reheap::SnapshotDone";

  SnapshotRequestId request = 0;  // what request_snapshot returned
  ActorRef target;
  std::string file;               // as requested
  std::uint8_t status = 0;        // SnapshotStatus
  std::uint8_t error_code = 0;    // SnapshotErrc, for kSnapshotError
  std::string error;              // empty for kSaved
  // SnapshotInfo, for kSaved.
  std::uint8_t kind = 0;          // SnapshotKind written (an increment may fall back to full)
  std::uint64_t id = 0;
  std::uint64_t parent_id = 0;
  std::uint64_t generation = 0;
  std::uint64_t pages_written = 0;
  std::uint64_t zero_pages = 0;
  std::uint64_t bytes_written = 0;
  std::string tracking;
  std::string fallback_reason;
  MSGPACK_DEFINE(request, target, file, status, error_code, error, kind, id, parent_id, generation,
                 pages_written, zero_pages, bytes_written, tracking, fallback_reason)

  bool ok() const noexcept { return status == static_cast<std::uint8_t>(SnapshotStatus::kSaved); }
  SnapshotStatus snapshot_status() const noexcept { return static_cast<SnapshotStatus>(status); }
  SnapshotErrc snapshot_errc() const noexcept { return static_cast<SnapshotErrc>(error_code); }
  SnapshotInfo info() const {
    SnapshotInfo i;
    i.kind = static_cast<SnapshotKind>(kind);
    i.id = id;
    i.parent_id = parent_id;
    i.generation = generation;
    i.pages_written = pages_written;
    i.zero_pages = zero_pages;
    i.bytes_written = bytes_written;
    i.tracking = tracking;
    i.fallback_reason = fallback_reason;
    return i;
  }

  // For whoever carries a request out (a worker, the test kit): kSaved with `i`, the inverse of
  // info(); or, for the exception a save threw, kSnapshotError with its code for a SnapshotError,
  // else kFailed, and `error` from what().
  void set_saved(const SnapshotInfo& i);
  void set_failure(std::exception_ptr thrown);
};

}  // namespace reheap
