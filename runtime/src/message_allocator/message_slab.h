// Slab: 256 KiB of the arena, aligned to its size, holding blocks of one size class.
//
//   [ header: 3 cache lines | block 0 | block 1 | ... | block capacity-1 | unused tail ]
//
// The header sits at the slab's aligned start, so the slab of any block is its address rounded
// down to kSlabSize. Its three cache lines separate the fields by who writes them, so that a
// thread freeing into the slab never shares a written line with the owner's hot path:
//   line 0  set when a pool takes the slab, read by every freeing thread (owner, class, size);
//   line 1  the owner's bookkeeping (local free list, carve cursor, list links);
//   line 2  the remote free list, written by other threads and taken whole by the owner.
//
// Every block of a slab is in exactly one place: not yet carved, handed out, in some pool's bin
// (any thread may cache any block it freed), on the slab's local list (given back by the owning
// pool), or on its remote list (given back by another thread). So
//   blocks known free to the slab = local_len + remote count, and
//   the slab is entirely free      <=>  carved == local_len + remote count.
//
// Remote list. The head is one 64-bit word: the first block's address in the low 48 bits and
// the list's length in the high 16, so the owner learns the count without walking the list.
// Other threads push runs of blocks with a CAS (Treiber stack); the owner takes the whole list
// with an exchange and never pops single blocks, so the push needs no ABA protection: it never
// reads the old head's link. The value kFullTag (address 1, length 0) marks a slab the owner
// dropped from its lists because nothing was left to hand out; whoever replaces the tag with
// blocks pushes the slab on its pool's `returned` list, which happens exactly once per tagging.
//
// `next_returned` is that list's link. Its writer is the thread that replaced the tag, from then
// until its push publishes the slab (release); its reader is the owner, after taking the list
// whole (acquire). The next writer is the one that replaces the *next* tag, which the owner sets
// only after it took the slab back and read the link. That thread may have held its blocks from
// long before, so the only order between the owner's read and its write is the tag itself: the
// owner sets it with release and the push that replaces it acquires (retire, push_remote).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "message_allocator/message_size_class.h"

namespace reheap::detail::msg {

struct Pool;

struct Block {
  Block* next;
};

inline constexpr unsigned kSlabShift = 18;
inline constexpr std::size_t kSlabSize = std::size_t{1} << kSlabShift;
inline constexpr std::uint32_t kSlabMagic = 0x5EA1AB;

enum class SlabState : std::uint8_t {
  kUnowned,  // in the arena's free store
  kCurrent,  // the slab of its class's bin
  kPartial,  // on the pool's partial list of its class: has (or had) free blocks
  kFull,     // tagged kFullTag, on no list; the first free into it hands it back
};

inline constexpr std::uint64_t kFullTag = 1;
inline constexpr unsigned kCountShift = 48;
inline constexpr std::uint64_t kAddressMask = (std::uint64_t{1} << kCountShift) - 1;

constexpr Block* head_block(std::uint64_t head) noexcept {
  return head == kFullTag ? nullptr : reinterpret_cast<Block*>(head & kAddressMask);
}
constexpr std::uint32_t head_count(std::uint64_t head) noexcept {
  return static_cast<std::uint32_t>(head >> kCountShift);
}

struct alignas(64) Slab {
  // Line 0. `local_owner` is the owning pool while the slab is listed and null while it is full
  // or unowned; a thread giving blocks back compares it with its own pool to choose the local
  // list. A relaxed atomic: the owner changes it while others read it, and any value other than
  // their own pool sends them to the remote list, which is always correct.
  std::atomic<Pool*> local_owner{nullptr};
  Pool* pool = nullptr;  // the owning pool while owned (orphaned pools included)
  std::uint32_t magic = 0;
  std::uint32_t block_size = 0;
  std::uint32_t capacity = 0;  // blocks that fit after the header
  std::uint8_t size_class = 0;

  // Line 1: the owning pool only.
  alignas(64) Block* local_free = nullptr;  // given back by the owner since last taken
  std::uint32_t local_len = 0;              // blocks on local_free
  std::uint32_t seen_free = 0;  // of those, already subtracted from the pool's bytes in use
  std::uint32_t carved = 0;     // blocks carved so far (they are never un-carved)
  SlabState state = SlabState::kUnowned;
  Slab* next_partial = nullptr;
  Slab* prev_owned = nullptr;  // the pool's list of every slab it owns
  Slab* next_owned = nullptr;

  // Line 2: other threads.
  alignas(64) std::atomic<std::uint64_t> remote{0};
  Slab* next_returned = nullptr;  // written by the thread that replaced kFullTag (see above)

  char* first_block() noexcept { return reinterpret_cast<char*>(this) + sizeof(Slab); }
  const char* first_block() const noexcept {
    return reinterpret_cast<const char*>(this) + sizeof(Slab);
  }
};

static_assert(sizeof(Slab) == 192, "the header is three cache lines");
static_assert(sizeof(Slab) % 16 == 0, "blocks after the header stay 16-byte aligned");
static_assert((kSlabSize - sizeof(Slab)) / 16 < (1u << (64 - kCountShift)),
              "the remote count of a full slab fits in the head's high bits");
static_assert((kSlabSize - sizeof(Slab)) / kMaxClassSize >= 7,
              "a slab holds at least seven blocks of the largest class");

inline Slab* slab_of(std::uintptr_t a) noexcept {
  return reinterpret_cast<Slab*>(a & ~(std::uintptr_t{kSlabSize} - 1));
}

}  // namespace reheap::detail::msg
