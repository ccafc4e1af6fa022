// Chunk placement: where a heap's new zone chunks go, and who may say so.
//
// A heap takes new 64 MiB chunks from the zone when it outgrows those it holds: a large chunk for
// its first page run (a block over 16 KiB) or when its page runs fill one, a run of chunks of its
// own for each huge block (over 1 MiB), a class chunk when a size class has used the 2 MiB it has
// in each class chunk. The zone places them first fit (zone.h), so where they land depends on
// everything else this process's zone holds. A live heap does not care; a replayed heap does: its
// bytes must be the recorded ones, addresses included, in a process whose zone holds other heaps.
//
// A ChunkPlacement attached to a heap hears of every chunk run the heap takes and may name the
// exact run it must take instead. A recording writes the takes down (RECORDING_FORMAT.md,
// "chunk"); a replay names the recorded run when the replayed heap asks at the same point of the
// same event (reheap/testing/replay.h). The heap asks only where it takes chunks from the zone, a
// slow path that runs once per 64 MiB at most; allocation fast paths never look.
//
// A named run is taken as a restore takes a snapshot's chunks: each chunk must be free, waiting in
// the quarantine, or the first chunk of a destroyed heap kept in a heap cache - held by no live
// heap. A run that a live heap holds (the asking heap included), or that leaves the half of the
// zone it was asked in, is refused: the allocation fails as if the zone were full, and the
// placement is told why. So nothing a placement says - whatever a log it read claims - can give
// the heap memory of another heap.
//
// Threading: the placement is called on the heap's thread, inside an allocation, with the heap
// current and in the middle of changing its state: it must not allocate in that heap (make no
// heap current, HeapScope(nullptr), before allocating) nor throw. It is attached and detached on
// that thread too. The attachment lives in process memory, never in the heap's pages (a snapshot
// does not carry it), and speaks for that heap only: a heap restored or created later in the
// same chunk starts without one.
#pragma once

#include <cstdint>
#include <optional>

#include "reheap/heap.h"

namespace reheap {

// The zone's two halves (zone.h): class chunks, and large chunks and huge runs.
enum class ChunkHalf : std::uint8_t { kClass = 0, kLarge = 1 };

// `count` chunks from the zone's chunk number `first` (0 is the chunk at the zone's base; the
// chunk at index i starts at Zone::stats().base + i * Zone::stats().chunk_size).
struct ChunkRun {
  ChunkHalf half = ChunkHalf::kClass;
  std::uint64_t first = 0;
  std::uint64_t count = 0;
  bool operator==(const ChunkRun&) const = default;
};

// Why a named run was not taken.
struct ChunkRefusal {
  bool outside_half = false;  // the run leaves the half it was asked in (or the zone)
  std::uint64_t holder = 0;   // else the id of a live heap holding one of its chunks (Heap::id()), 0 if none
};

class ChunkPlacement {
 public:
  // The heap is about to take `count` contiguous chunks of `half`: the index of the first chunk
  // it must take exactly, or nullopt to let the zone place them.
  virtual std::optional<std::uint64_t> place(ChunkHalf half, std::uint64_t count) noexcept = 0;
  // The heap took `run` (placed by the zone, or the one place() named).
  virtual void taken(const ChunkRun& run) noexcept = 0;
  // The run place() named was not taken; the allocation that asked for it fails.
  virtual void refused(const ChunkRun& run, const ChunkRefusal& why) noexcept = 0;

 protected:
  ~ChunkPlacement() = default;
};

// Attaches `placement` to `heap` (null detaches it). On the heap's thread; the placement must
// outlive the attachment.
void set_chunk_placement(Heap& heap, ChunkPlacement* placement) noexcept;
ChunkPlacement* chunk_placement(const Heap& heap) noexcept;
// Detaches `placement` from the heap whose id is `heap_id` if it is still attached there; nothing
// if that heap is gone (its chunk may hold another heap by now). For an owner that may outlive
// the heap it watched.
void detach_chunk_placement(std::uint64_t heap_id, const ChunkPlacement* placement) noexcept;

}  // namespace reheap
