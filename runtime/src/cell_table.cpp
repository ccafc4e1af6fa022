// CellTable: slots, generations and the free list (see cell.h).
#include <algorithm>
#include <stdexcept>

#include "cell.h"
#include "reheap/heap_scope.h"
#include "snapshot_request.h"

namespace reheap::detail {

CellTable::~CellTable() {
  HeapScope system(nullptr);
  for (auto& b : blocks_) delete[] b.load(std::memory_order_relaxed);
}

void CellTable::grow_to(std::uint32_t slots) {
  HeapScope system(nullptr);
  while (created_ < slots) {
    const std::uint32_t block = created_ / kBlockCells;
    if (blocks_[block].load(std::memory_order_relaxed) == nullptr) {
      Cell* cells = new Cell[kBlockCells];
      for (std::uint32_t i = 0; i < kBlockCells; ++i) cells[i].slot = block * kBlockCells + i;
      blocks_[block].store(cells, std::memory_order_release);
    }
    in_use_.push_back(false);
    ++created_;
  }
}

std::uint64_t CellTable::drain(Cell* c) noexcept {
  // Dead letters that raced with the previous occupant's stop (see cell.h).
  std::uint64_t n = 0;
  while (Envelope* e = c->mailbox.pop()) {
    c->mailbox.uncount(e);
    abandon_if_snapshot_request(*e);  // still owes its requester an answer
    free_envelope(e);
    ++n;
  }
  return n;
}

Cell* CellTable::acquire(std::uint64_t* dead) {
  std::lock_guard lock(mutex_);
  std::uint32_t slot = 0;
  for (;;) {
    if (free_.empty()) {
      // Slot 0 is never used: with generation 0 never issued either, no ActorRef is 0.
      if (created_ == 0) grow_to(1);
      if (created_ >= kMaxCells) {
        HeapScope system(nullptr);
        throw std::length_error("reheap: the runtime has no free reactor slot (16M reactors live)");
      }
      slot = created_;
      grow_to(created_ + 1);
      break;
    }
    slot = free_.back();
    free_.pop_back();
    if (!in_use_[slot]) break;  // else taken by acquire_exact meanwhile
  }
  in_use_[slot] = true;
  live_.fetch_add(1, std::memory_order_relaxed);
  Cell* c = cell(slot);
  c->issued = std::max(c->issued, c->generation);
  *dead = drain(c);
  return c;
}

Cell* CellTable::acquire_exact(ActorRef ref, std::uint64_t* dead) {
  std::lock_guard lock(mutex_);
  const std::uint32_t slot = ref.slot();
  if (slot == 0 || slot >= kMaxCells || ref.generation() == 0) return nullptr;
  if (slot >= created_) {
    const std::uint32_t first_new = created_ == 0 ? 1 : created_;
    grow_to(slot + 1);
    HeapScope system(nullptr);
    for (std::uint32_t s = first_new; s < slot; ++s) free_.push_back(s);
  }
  if (in_use_[slot]) return nullptr;
  in_use_[slot] = true;
  live_.fetch_add(1, std::memory_order_relaxed);
  Cell* c = cell(slot);
  c->generation = ref.generation();
  c->issued = std::max(c->issued, ref.generation());
  *dead = drain(c);
  return c;
}

void CellTable::release(Cell* c) noexcept {
  c->id.store(0, std::memory_order_release);
  std::lock_guard lock(mutex_);
  // Past every generation issued here, not just past the one leaving: after a restore of an
  // older generation, `generation + 1` could be a generation a stale reference still holds.
  if (c->issued == UINT32_MAX) {
    c->generation = 1;  // wrapped around, as before: four billion reuses of one slot
    c->issued = 0;
  } else {
    c->generation = c->issued + 1;
  }
  in_use_[c->slot] = false;
  {
    HeapScope system(nullptr);
    try {
      free_.push_back(c->slot);
    } catch (...) {
      // Out of memory: the slot is lost for reuse, which is harmless.
    }
  }
  live_.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace reheap::detail
