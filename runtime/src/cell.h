// Cell: the runtime's record of one reactor, kept in process memory (never in the reactor's heap).
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
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <map>
#include <vector>

#include "mailbox.h"
#include "reheap/heap.h"
#include "reheap/reactor.h"
#include "reheap/reactor_stats.h"
#include "reheap/snapshot.h"
#include "reheap/spawn_options.h"
#include "reheap/supervision.h"

namespace reheap::detail {

class Worker;
struct TimerHandle;
struct TcpSocket;

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
  std::uint32_t generation = 1;  // of the next occupant (guarded by the table's mutex when free)
  // The highest generation this slot has handed out (under the table's mutex). A restore brings
  // back an older generation; the next occupant after it must still get a new one.
  std::uint32_t issued = 0;
  HeapPtr heap;
  Reactor* reactor = nullptr;
  SpawnOptions options;
  bool started = false;   // on_start (or the restore hooks) ran
  bool restored = false;  // the occupant came from a snapshot: run the restore hooks first
  bool failed = false;    // a hook threw during the current turn
  bool graceful_stop = true;  // kStopping: call on_stop and the destructor
  std::string failure_what;
  std::string failure_hook;
  FailureKind failure_kind = FailureKind::kException;
  Worker* move_to = nullptr;  // a move waiting for the next turn
  bool arriving = false;      // moved here: re-arm the timers first
  std::unique_ptr<Snapshotter> snapshotter;
  std::uint64_t current_sender = 0;  // of the message being handled (Reactor::sender)
  bool snapshotter_tracks = false;
  std::vector<unsigned char> checkpoint;  // in-memory snapshot for kRestart (no file yet)
  std::filesystem::path last_snapshot;    // newest file from Runtime::snapshot
  std::deque<std::chrono::steady_clock::time_point> restart_times;
  std::map<TimerId, TimerHandle*> timers;     // ordered: deterministic iteration
  std::map<SocketId, TcpSocket*> sockets;
  ReactorStats stats;
  std::size_t worker_position = 0;  // index in its worker's cells()

  ActorRef ref() const noexcept { return ActorRef(id.load(std::memory_order_relaxed)); }
};

// Maps ActorRef slots to cells: a fixed array of block pointers, each block holding kBlockCells
// cells, so a lookup is two loads and never takes a lock.
class CellTable {
 public:
  static constexpr std::uint32_t kBlockCells = 1024;
  static constexpr std::uint32_t kMaxBlocks = 16384;  // 16M reactors
  static constexpr std::uint32_t kMaxCells = kBlockCells * kMaxBlocks;

  CellTable() = default;
  ~CellTable();
  CellTable(const CellTable&) = delete;
  CellTable& operator=(const CellTable&) = delete;

  // The live cell `ref` names, or null. Any thread.
  Cell* find(ActorRef ref) const noexcept {
    const std::uint32_t slot = ref.slot();
    // Slot 0 is never used, and a free cell's id is 0: without this check the null ActorRef would
    // name the free cell of slot 0 (sends to it would be lost, never dead letters).
    if (slot == 0 || slot >= kMaxCells) return nullptr;
    Cell* block = blocks_[slot / kBlockCells].load(std::memory_order_acquire);
    if (block == nullptr) return nullptr;
    Cell* c = &block[slot % kBlockCells];
    return c->id.load(std::memory_order_acquire) == ref.value() ? c : nullptr;
  }

  // A free cell for a new reactor (its generation set, `scheduled` still 1, mailbox drained of
  // dead letters, whose count is added to *dead). Throws std::length_error when full.
  Cell* acquire(std::uint64_t* dead);
  // The free cell of `ref`'s slot, taking `ref`'s generation: for restoring. Null if the slot is
  // in use.
  Cell* acquire_exact(ActorRef ref, std::uint64_t* dead);
  // Gives a cell back (its occupant fully torn down by its worker).
  void release(Cell* c) noexcept;

  std::size_t live() const noexcept { return live_.load(std::memory_order_relaxed); }

  // Every cell ever created (for shutdown's final sweep). Not thread-safe with acquire().
  template <class F>
  void for_each(F&& f) {
    const std::uint32_t n = created_;
    for (std::uint32_t s = 0; s < n; ++s) f(cell(s));
  }

 private:
  Cell* cell(std::uint32_t slot) const noexcept {
    return &blocks_[slot / kBlockCells].load(std::memory_order_relaxed)[slot % kBlockCells];
  }
  void grow_to(std::uint32_t slots);  // under mutex_
  std::uint64_t drain(Cell* c) noexcept;

  std::atomic<Cell*> blocks_[kMaxBlocks] = {};
  std::mutex mutex_;
  std::vector<std::uint32_t> free_;  // under mutex_; may hold slots taken by acquire_exact
  std::vector<bool> in_use_;         // under mutex_
  std::uint32_t created_ = 0;        // under mutex_
  std::atomic<std::size_t> live_{0};
};

}  // namespace reheap::detail
