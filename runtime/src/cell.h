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
#include <shared_mutex>
#include <string>
#include <unordered_map>
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
  // Of the next occupant (guarded by the table's mutex when free): 1..ActorRef::kMaxGeneration.
  std::uint32_t generation = 1;
  // The highest generation this slot has handed out (under the table's mutex). A restore brings
  // back an older generation; the next occupant after it must still get a new one.
  std::uint32_t issued = 0;
  // The reference of a relocated occupant (see CellTable; also the table's key for it), or 0
  // (under the table's mutex).
  std::uint64_t relocated_ref = 0;
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

// Maps ActorRefs to cells. A reference of the runtime's own origin (actor_ref.h) names a slot: a
// fixed array of block pointers, each block holding kBlockCells cells, so its lookup is two loads
// and never takes a lock. A restored reactor keeps its reference but cannot always have the slot
// it names: one of another origin (restored from another process) never does, and one of this
// origin may find its slot taken by a later reactor. Such a reactor occupies whatever slot is
// free and is found through a map from its reference to its cell ("relocated"), under a
// reader-writer lock: one shared lock per send to it, and none at all while no reactor is
// relocated. A reference that neither its slot nor the map holds names no reactor. No reference
// can name two: a relocated reference's generation was issued before its slot's current one, and
// a slot only moves past the generations it issued; another origin's never enter the slot table.
class CellTable {
 public:
  static constexpr std::uint32_t kBlockCells = 1024;
  static constexpr std::uint32_t kMaxBlocks = 16384;  // 16M reactors
  static constexpr std::uint32_t kMaxCells = kBlockCells * kMaxBlocks;
  static_assert(kMaxCells <= std::uint32_t{1} << ActorRef::kSlotBits, "a slot must fit in a reference");

  // `origin`: the runtime's NodeIdentity::origin(), which its own references carry.
  explicit CellTable(std::uint32_t origin) noexcept : origin_(origin) {}
  ~CellTable();
  CellTable(const CellTable&) = delete;
  CellTable& operator=(const CellTable&) = delete;

  // The live cell `ref` names, or null. Any thread.
  Cell* find(ActorRef ref) const noexcept {
    const std::uint32_t slot = ref.slot();
    // Slot 0 is never used, and a free cell's id is 0: without this check the null ActorRef would
    // name the free cell of slot 0 (sends to it would be lost, never dead letters).
    if (ref.origin() == origin_ && slot != 0 && slot < kMaxCells) [[likely]] {
      if (Cell* block = blocks_[slot / kBlockCells].load(std::memory_order_acquire)) {
        Cell* c = &block[slot % kBlockCells];
        if (c->id.load(std::memory_order_acquire) == ref.value()) return c;
      }
    }
    if (relocated_count_.load(std::memory_order_relaxed) == 0) return nullptr;
    return find_relocated(ref);
  }

  // A free cell for a new reactor (its generation set, `scheduled` still 1, mailbox drained of
  // dead letters, whose count is added to *dead). Throws std::length_error when full.
  Cell* acquire(std::uint64_t* dead);
  // A free cell for restoring the reactor `ref` names, under that reference (the caller sets
  // the cell's id when it publishes the reactor): the slot `ref` names if it has this runtime's
  // origin and the slot is free (taking `ref`'s generation), else any free cell, relocated.
  // Null if `ref` names a live reactor (or one being restored).
  Cell* acquire_for(ActorRef ref, std::uint64_t* dead);
  // Gives a cell back (its occupant fully torn down by its worker).
  void release(Cell* c) noexcept;

  std::size_t live() const noexcept { return live_.load(std::memory_order_relaxed); }
  std::uint32_t origin() const noexcept { return origin_; }

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
  [[gnu::noinline]] Cell* find_relocated(ActorRef ref) const noexcept;
  Cell* acquire_locked(std::uint64_t* dead);  // under mutex_
  void grow_to(std::uint32_t slots);  // under mutex_
  std::uint64_t drain(Cell* c) noexcept;

  std::atomic<Cell*> blocks_[kMaxBlocks] = {};
  std::mutex mutex_;
  std::vector<std::uint32_t> free_;  // under mutex_; may hold slots taken by acquire_for
  std::vector<bool> in_use_;         // under mutex_
  std::uint32_t created_ = 0;        // under mutex_
  std::atomic<std::size_t> live_{0};
  const std::uint32_t origin_;
  // Relocated reactors by reference (nodes in the system heap). Written under mutex_ and
  // relocated_mutex_ (in that order), read under relocated_mutex_ alone.
  mutable std::shared_mutex relocated_mutex_;
  std::unordered_map<std::uint64_t, Cell*> relocated_;
  std::atomic<std::size_t> relocated_count_{0};
  std::size_t retired_ = 0;  // slots whose generations are spent (under mutex_)
};

}  // namespace reheap::detail
