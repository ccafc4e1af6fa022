// CellTable: ActorRef -> Cell, lock-free for the runtime's own references (see below).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "reactor/cell.h"
#include "reheap/internal/brief_lock.h"

namespace reheap::detail {

// Maps ActorRefs to cells. A reference of the runtime's own origin (actor_ref.h) names a slot: a
// fixed array of block pointers, each block holding kBlockCells cells, so its lookup is two loads
// and never takes a lock. A restored reactor keeps its reference but cannot always have the slot
// it names: one of another origin (restored from another process) never does, and one of this
// origin may find its slot taken by a later reactor. Such a reactor occupies whatever slot is
// free and is found through a map from its reference to its cell ("relocated"), under a
// reader-writer lock: one shared lock per send to it, and none at all while no reactor is
// relocated. A reference that neither its slot nor the map holds names no reactor. No reference
// can name two: a relocated reference's generation was issued before its slot's current one, and
// a slot only moves past the generations issued for it, by this table or by another runtime's in
// this process (slot_generations.h); another origin's never enter the slot table.
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
  void prefetch_cell(std::uint32_t slot) const noexcept;
  // The free-slot ring (under mutex_). push_free throws std::bad_alloc when it cannot grow.
  void push_free(std::uint32_t slot);
  std::uint32_t pop_free() noexcept;

  std::atomic<Cell*> blocks_[kMaxBlocks] = {};
  // On one line: the lock and everything a spawn and a stop change under it.
  alignas(64) BriefLock mutex_;  // taken at every spawn and stop, from any thread
  // The free slots, a ring under mutex_ (in the system heap); may hold slots taken by
  // acquire_for. Oldest first: a slot waits for every other free one before it is reused, so its
  // lines have left the cache of the worker that freed it.
  std::uint32_t* free_ring_ = nullptr;
  std::uint32_t free_capacity_ = 0;
  std::uint32_t free_head_ = 0;
  std::uint32_t free_count_ = 0;
  std::uint32_t created_ = 0;        // under mutex_
  std::atomic<std::size_t> live_{0};
  alignas(64) const std::uint32_t origin_;
  // Relocated reactors by reference (nodes in the system heap). Written under mutex_ and
  // relocated_mutex_ (in that order), read under relocated_mutex_ alone.
  mutable std::shared_mutex relocated_mutex_;
  std::unordered_map<std::uint64_t, Cell*> relocated_;
  std::atomic<std::size_t> relocated_count_{0};
  std::size_t retired_ = 0;  // slots whose generations are spent (under mutex_)
};

}  // namespace reheap::detail
