// CellTable: slots, generations and the free list (see cell.h).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "reactor/cell_table.h"
#include "checkpoint/snapshot_request.h"
#include "messaging/mailbox_command.h"
#include "reactor/slot_generations.h"
#include "reheap/heap_scope.h"

namespace reheap::detail {

CellTable::~CellTable() {
  HeapScope system(nullptr);
  for (auto& b : blocks_) delete[] b.load(std::memory_order_relaxed);
  delete[] free_ring_;
}

void CellTable::push_free(std::uint32_t slot) {
  if (free_count_ == free_capacity_) {
    HeapScope system(nullptr);
    const std::uint32_t capacity = free_capacity_ == 0 ? kBlockCells : free_capacity_ * 2;
    auto* ring = new std::uint32_t[capacity];
    for (std::uint32_t i = 0; i < free_count_; ++i) ring[i] = free_ring_[(free_head_ + i) % free_capacity_];
    delete[] free_ring_;
    free_ring_ = ring;
    free_capacity_ = capacity;
    free_head_ = 0;
  }
  free_ring_[(free_head_ + free_count_) % free_capacity_] = slot;
  ++free_count_;
}

std::uint32_t CellTable::pop_free() noexcept {
  const std::uint32_t slot = free_ring_[free_head_];
  free_head_ = free_head_ + 1 == free_capacity_ ? 0 : free_head_ + 1;
  --free_count_;
  return slot;
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
    ++created_;
  }
}

std::uint64_t CellTable::drain(Cell* c) noexcept {
  // Dead letters that raced with the previous occupant's stop (see cell.h).
  std::uint64_t n = 0;
  while (Envelope* e = c->mailbox.pop()) {
    c->mailbox.uncount(e);
    abandon_system_message(*e);  // a snapshot request or a command still owes an answer
    free_envelope(e);
    ++n;
  }
  return n;
}

Cell* CellTable::find_relocated(ActorRef ref) const noexcept {
  std::shared_lock lock(relocated_mutex_);
  const auto it = relocated_.find(ref.value());
  if (it == relocated_.end()) return nullptr;
  Cell* c = it->second;
  return c->id.load(std::memory_order_acquire) == ref.value() ? c : nullptr;
}

Cell* CellTable::acquire(std::uint64_t* dead) {
  std::lock_guard lock(mutex_);
  return acquire_locked(dead);
}

Cell* CellTable::acquire_for(ActorRef ref, std::uint64_t* dead) {
  std::lock_guard lock(mutex_);
  if (ref.generation() == 0 || ref.slot() == 0) return nullptr;
  {
    std::shared_lock read(relocated_mutex_);
    if (relocated_.count(ref.value()) != 0) return nullptr;
  }
  const std::uint32_t slot = ref.slot();
  if (ref.origin() == origin_ && slot < kMaxCells) {
    if (slot >= created_) {
      const std::uint32_t first_new = created_ == 0 ? 1 : created_;
      grow_to(slot + 1);
      for (std::uint32_t s = first_new; s < slot; ++s) push_free(s);
    }
    Cell* c = cell(slot);
    if (!c->in_use) {
      c->in_use = true;
      live_.fetch_add(1, std::memory_order_relaxed);
      c->generation = ref.generation();
      c->issued = std::max(c->issued, ref.generation());
      note_slot_generation(slot, ref.generation());
      *dead = drain(c);
      return c;
    }
    // The occupant's generation is its reference's (or a relocated reactor's local one, which
    // this reference's cannot be: see cell.h).
    if (c->relocated_ref == 0 && c->generation == ref.generation()) return nullptr;
  }
  {
    // Room first: once the cell is taken, nothing may throw.
    HeapScope system(nullptr);
    std::unique_lock write(relocated_mutex_);
    relocated_.reserve(relocated_.size() + 1);
  }
  Cell* c = acquire_locked(dead);
  HeapScope system(nullptr);
  std::unique_lock write(relocated_mutex_);
  relocated_.emplace(ref.value(), c);
  c->relocated_ref = ref.value();
  relocated_count_.fetch_add(1, std::memory_order_relaxed);
  return c;
}

Cell* CellTable::acquire_locked(std::uint64_t* dead) {
  Cell* c = nullptr;
  for (;;) {
    std::uint32_t slot = 0;
    if (free_count_ == 0) {
      // Slot 0 is never used: with generation 0 never issued either, no ActorRef is 0.
      if (created_ == 0) grow_to(1);
      if (created_ >= kMaxCells) {
        HeapScope system(nullptr);
        throw std::length_error("reheap: the runtime has no free reactor slot (16M slots live or retired; " +
                                std::to_string(retired_) + " retired after 65,535 reactors each)");
      }
      slot = created_;
      grow_to(created_ + 1);
    } else {
      slot = pop_free();
      if (cell(slot)->in_use) continue;  // taken by acquire_for meanwhile
    }
    c = cell(slot);
    // Another runtime of this process may have issued generations of this slot (slot_generations.h).
    const std::uint32_t generation = claim_slot_generation(slot, c->generation);
    if (generation != 0) {
      c->generation = generation;
      break;
    }
    c->issued = ActorRef::kMaxGeneration;  // spent in this process: retired, as in release()
    ++retired_;
  }
  c->in_use = true;
  live_.fetch_add(1, std::memory_order_relaxed);
  c->issued = std::max(c->issued, c->generation);
  *dead = drain(c);
  if (free_count_ != 0) prefetch_cell(free_ring_[free_head_]);
  return c;
}

// The cell a spawn takes was written last by the worker that tore its previous occupant down, and
// spawning fills most of its lines: when spawns come from one thread and stops happen on others,
// each is a transfer from another core's cache. Free slots are taken oldest first, so the next
// spawn's cell is known now and its lines can be on their way meanwhile.
void CellTable::prefetch_cell(std::uint32_t slot) const noexcept {
  const char* const bytes = reinterpret_cast<const char*>(cell(slot));
  for (std::size_t line = 0; line < sizeof(Cell); line += 64) __builtin_prefetch(bytes + line, 1);
}

void CellTable::release(Cell* c) noexcept {
  c->id.store(0, std::memory_order_release);
  std::lock_guard lock(mutex_);
  if (c->relocated_ref != 0) {
    std::unique_lock write(relocated_mutex_);
    relocated_.erase(c->relocated_ref);
    c->relocated_ref = 0;
    relocated_count_.fetch_sub(1, std::memory_order_relaxed);
  }
  c->in_use = false;
  // Past every generation issued here, not just past the one leaving: after a restore of an
  // older generation, `generation + 1` could be a generation a stale reference still holds. A
  // slot that has issued its last generation is retired, never reused: wrapping around would
  // make old references valid again. The cell stays (cells are type-stable), so a retired slot
  // costs its few hundred bytes; only a restore of one of its own references takes it again.
  if (c->issued >= ActorRef::kMaxGeneration) {
    ++retired_;
    live_.fetch_sub(1, std::memory_order_relaxed);
    return;
  }
  c->generation = c->issued + 1;
  try {
    push_free(c->slot);
  } catch (...) {
    // Out of memory: the slot is lost for reuse, which is harmless.
  }
  live_.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace reheap::detail
