// Cell: the runtime's record of one reactor, kept in process memory (never in the reactor's heap):
// the line senders share (its reference, worker, mailbox), what its worker owns (heap, reactor,
// timers, sockets, statistics), and two parts with their own files: its snapshots
// (cell_snapshots.h) and its supervision (cell_supervision.h). CellTable (cell_table.h) maps
// references to cells.
//
// Ownership: the fields under "worker-owned" are touched only by the worker the cell is pinned
// to (or by the thread that spawns or restores the reactor, before it publishes the cell). The
// fields under "shared" are read or written by senders on any thread.
//
// Scheduling handshake: `scheduled` is 1 while the cell is on a ready list or run queue, or
// running. A sender that pushes a message and flips `scheduled` 0 -> 1 enqueues the cell on its
// worker; the worker, done with a turn, stores 0 and then looks at the mailbox again, re-flipping
// if a message arrived in between. Exactly one of them sees the other's write (both are seq_cst),
// so no message is left waiting on an idle cell, and a cell is never on two queues.
//
// Cells are type-stable: they live in blocks that are freed only with the runtime, so a sender
// holding a stale pointer reaches a cell, not freed memory. A cell of a stopped reactor is parked
// with `scheduled` = 1 (no worker is asked to run it); a message that raced with the stop waits
// in its mailbox until the cell is reused, and is dropped then as a dead letter (`receiver`
// differs from the new occupant).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>

#include "checkpoint/cell_snapshots.h"
#include "messaging/mailbox.h"
#include "recording/recorder.h"
#include "reheap/heap.h"
#include "reheap/reactor.h"
#include "reheap/reactor_stats.h"
#include "reheap/spawn_options.h"
#include "scheduling/placement.h"
#include "supervision/cell_supervision.h"

namespace reheap::detail {

class Worker;
struct TimerHandle;
struct TcpSocket;
namespace replay {
class ExactRestart;
}
// Deletes an ExactRestart where its type is complete (replay/exact_restart.cpp).
struct ExactRestartDeleter {
  void operator()(replay::ExactRestart* restart) const noexcept;
};

enum class CellState : std::uint8_t {
  kFree,      // no reactor
  kLive,
  kStopping,  // stop requested: finishes after the current hook
};

struct Cell {
  // ---- shared: read by every send (one cache line, rarely written) ----
  alignas(64) std::atomic<std::uint64_t> id{0};  // the occupant's ActorRef value, 0 when free
  std::atomic<Worker*> worker{nullptr};
  std::atomic<std::uint32_t> capacity{0};     // MailboxConfig::capacity; 0 unbounded
  std::atomic<bool> reject_when_full{false};  // OverflowPolicy::kReject
  std::atomic<std::uint8_t> scheduled{1};     // parked while free (see above)
  std::uint32_t slot = 0;                     // fixed at creation
  std::atomic<std::uint64_t> rejected{0};
  // ---- the mailbox: a producers' line, then the consumer's (see mailbox.h) ----
  Mailbox mailbox;

  // ---- worker-owned ----
  Cell* next_ready = nullptr;  // link of the worker's ready list and run queue
  CellState state = CellState::kFree;
  // Of the next occupant (guarded by the table's mutex when free): 1..ActorRef::kMaxGeneration.
  std::uint32_t generation = 1;
  // The highest generation this slot has handed out (under the table's mutex). A restore brings
  // back an older generation; the next occupant after it must still get a new one.
  std::uint32_t issued = 0;
  // Taken by an occupant or a restore under way (under the table's mutex). Kept here rather than
  // in a table-wide bitmap, whose words the spawning and the stopping threads would pass back and
  // forth: the cell's own line is one they write anyway.
  bool in_use = false;
  // The reference of a relocated occupant (see CellTable; also the table's key for it), or 0
  // (under the table's mutex).
  std::uint64_t relocated_ref = 0;
  HeapPtr heap;
  Reactor* reactor = nullptr;
  SpawnOptions options;
  bool started = false;   // on_start (or the restore hooks) ran
  bool restored = false;  // the occupant came from a snapshot: run the restore hooks first
  bool graceful_stop = true;  // kStopping: call on_stop and the destructor
  // A stop or a failure is under way: it counts as one more thing in flight (wait_idle) until it
  // settles, with the reactor torn down or restarted (Worker::count_settling).
  bool settling = false;
  Worker* move_to = nullptr;  // a move waiting for the next turn
  bool arriving = false;      // moved here: re-arm the timers first
  std::uint64_t current_sender = 0;  // of the message being handled (Reactor::sender)
  std::map<TimerId, TimerHandle*> timers;     // ordered: deterministic iteration
  std::map<SocketId, TcpSocket*> sockets;
  ReactorStats stats;
  std::size_t worker_position = 0;  // index in its worker's cells()
  CellSnapshots snap;          // its snapshot chain and restart checkpoint
  CellSupervision supervision;  // what failed, and its restarts
  // A recorded reactor coming back exactly (replay/exact_restart.h, restart.h): while set, the
  // replay of its log runs at its turns and nothing else reaches it.
  std::unique_ptr<replay::ExactRestart, ExactRestartDeleter> restart;
  std::unique_ptr<Recorder> recorder;  // its recording, if it is recorded (recorder.h)
  CellPlacement placement;  // the locality policy's counters (placement.h)

  ActorRef ref() const noexcept { return ActorRef(id.load(std::memory_order_relaxed)); }
};

}  // namespace reheap::detail
