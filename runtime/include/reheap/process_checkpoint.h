// Whole-process checkpoints coordinated with the reactors: Runtime::checkpoint_process.
//
// The call brings every worker to a barrier between two events (no handler running; mailboxes
// keep what was sent and take what outside threads send meanwhile), prepares what a dump cannot
// hold, lets the engine (checkpoint_engine.h) dump the process with it left running, and resumes.
// At the barrier, in order:
//   * timers are parked with the time each had left, and re-armed from the clock when the workers
//     resume, so a restored process (whose monotonic clock is another) keeps every timer's delay;
//   * TCP, by policy: established connections are dumped with TCP_REPAIR when the engine can
//     (CAP_NET_ADMIN), otherwise they are closed and each reactor hears on_closed with
//     ECONNABORTED; listeners are kept either way (a restored listener accepts again);
//   * write tracking is suspended (write_tracking.h): the userfaultfd is unregistered and closed,
//     and every reactor tracked for increments writes its next snapshot in full.
// libuv 1.44 (Debian 12) opens no io_uring ring; a libuv from 1.45 on does for file operations,
// and CRIU cannot dump one: the CRIU engine refuses, naming the descriptor (run such a libuv with
// UV_USE_IO_URING=0).
//
// In the restored process the same call returns kRestored: tracking is reopened, on_restored
// runs (before any reactor's next event) so that the program can refresh what names this process
// (its PID, node incarnation), then the workers resume. The pause every reactor sees is the
// barrier plus the dump; CheckpointResult reports both.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "reheap/checkpoint_engine.h"

namespace reheap {

enum class TcpCheckpointPolicy {
  kAuto,              // keep established connections if the engine can, else close them
  kKeepEstablished,   // dump them with TCP_REPAIR; refused (CheckpointError) if the engine cannot
  kCloseConnections,  // close every connection (on_closed: ECONNABORTED); listeners stay
};

struct CheckpointResult {
  DumpOutcome outcome = DumpOutcome::kDumped;
  std::chrono::nanoseconds barrier{0};  // from the request until every worker was parked
  std::chrono::nanoseconds dump{0};     // the engine's dump
  std::chrono::nanoseconds pause{0};    // from the first worker parked until all resumed
  std::size_t connections_closed = 0;
  bool kept_established_tcp = false;
  std::size_t tracked_heaps = 0;        // Snapshotters whose tracking was suspended
  std::string tracking_error;           // why tracking could not be reopened, or ""
};

struct CheckpointOptions {
  std::shared_ptr<CheckpointEngine> engine{};  // null: criu_engine()
  TcpCheckpointPolicy tcp = TcpCheckpointPolicy::kAuto;
  bool leave_running = true;
  // A worker that has not reached the barrier by then (a handler running that long) makes the
  // call throw CheckpointError; the workers already parked resume, nothing is dumped.
  std::chrono::milliseconds barrier_timeout{10'000};
  // Runs in the restored process, on the calling thread, before the workers resume.
  std::function<void(const CheckpointResult&)> on_restored{};
};

}  // namespace reheap
