// The slow paths behind the bins, and trimming: everything that moves blocks between a pool's
// bins and slabs, or slabs between a pool and the arena.
//
// Refilling the `free` list of a class's bin tries, in order:
//   1. the bin's own `freed` list (blocks this thread freed, whoever allocated them: warm);
//   2. the current slab's local list (blocks given back to the slab by this pool);
//   3. the current slab's remote list, taken whole with one exchange;
//   4. carving fresh blocks from the current slab (at most kCarveBytes at a time, so a slab's
//      pages are touched only as they are needed);
//   5. otherwise the slab is exhausted: it is tagged full and leaves the bin, and the next slab
//      comes from the slabs handed back through `returned`, the class's partial list, or the
//      arena, in that order.
// Lists are moved whole, never walked: a refill costs a few loads and at most one atomic
// exchange, however many blocks it brings. Giving a full `freed` list back (give_back) walks
// it, which costs little: its blocks were just touched by this thread.
//
// Bytes in use (Pool::out_bytes) are kept per slab as carved blocks minus the free blocks the
// pool has already subtracted (Slab::seen_free, which are always on the local list). Blocks on
// a slab's lists are subtracted when trimming collects them; a list moved from a slab to a bin
// is counted back.
#include <algorithm>
#include <new>

#include "message_allocator/message_arena.h"
#include "message_allocator/message_build.h"
#include "message_allocator/message_pool.h"

namespace reheap::detail::msg {
namespace {

inline constexpr std::size_t kCarveBytes = 16 * 1024;

std::uint64_t bytes(const Slab* s, std::uint64_t blocks) noexcept { return blocks * s->block_size; }

void link_owned(Pool* pool, Slab* s) noexcept {
  s->prev_owned = nullptr;
  s->next_owned = pool->owned;
  if (pool->owned != nullptr) pool->owned->prev_owned = s;
  pool->owned = s;
}

void unlink_owned(Pool* pool, Slab* s) noexcept {
  if (s->prev_owned != nullptr) {
    s->prev_owned->next_owned = s->next_owned;
  } else {
    pool->owned = s->next_owned;
  }
  if (s->next_owned != nullptr) s->next_owned->prev_owned = s->prev_owned;
}

// Makes arena memory a slab of class `cls` owned by `pool`.
void init_slab(Pool* pool, Slab* s, unsigned cls) noexcept {
  unpoison(s, kSlabSize);  // blocks of a class this slab held before may still be poisoned
  new (s) Slab{};
  s->pool = pool;
  s->magic = kSlabMagic;
  s->block_size = kBlockSize[cls];
  s->capacity = static_cast<std::uint32_t>((kSlabSize - sizeof(Slab)) / s->block_size);
  s->size_class = static_cast<std::uint8_t>(cls);
  s->local_owner.store(pool, std::memory_order_relaxed);
  link_owned(pool, s);
  pool->slabs.add(1);
}

// True if every carved block of `s` is on its local or remote list. Only for slabs not in a bin.
bool entirely_free(const Slab* s) noexcept {
  const std::uint64_t head = s->remote.load(std::memory_order_relaxed);
  return s->carved == s->local_len + (head == kFullTag ? 0 : head_count(head));
}

// Gives an entirely free slab, on no list of the pool, back to the arena.
void release(Pool* pool, Slab* s, bool to_os) noexcept {
  // Acquire: the frees pushed by other threads happen before the slab's memory is reused.
  const std::uint64_t head = s->remote.load(std::memory_order_acquire);
  pool->remote_frees.add(head_count(head));
  pool->local_frees.add(s->local_len - s->seen_free);
  pool->out_bytes.sub(bytes(s, s->carved - s->seen_free));
  pool->slabs.sub(1);
  unlink_owned(pool, s);
  s->local_owner.store(nullptr, std::memory_order_relaxed);
  s->remote.store(0, std::memory_order_relaxed);
  s->pool = nullptr;
  s->magic = 0;
  s->state = SlabState::kUnowned;
  release_slab(s, to_os);
}

// Links up to kCarveBytes of fresh blocks of `s` into a list; null when the slab is carved out.
Block* carve(Pool* pool, Slab* s) noexcept {
  const std::uint32_t left = s->capacity - s->carved;
  if (left == 0) return nullptr;
  const std::uint32_t n =
      std::min<std::uint32_t>(left, std::max<std::uint32_t>(1, kCarveBytes / s->block_size));
  char* first = s->first_block() + std::size_t{s->carved} * s->block_size;
  char* last = first + std::size_t{n - 1} * s->block_size;
  for (char* p = first; p != last; p += s->block_size) {
    reinterpret_cast<Block*>(p)->next = reinterpret_cast<Block*>(p + s->block_size);
  }
  reinterpret_cast<Block*>(last)->next = nullptr;
  s->carved += n;
  pool->out_bytes.add(bytes(s, n));
  return reinterpret_cast<Block*>(first);
}

// A list of free blocks of the current slab `s` for its bin, or null if it has none left.
Block* take_free(Pool* pool, Slab* s) noexcept {
  if (Block* list = s->local_free) {
    pool->local_frees.add(s->local_len - s->seen_free);
    pool->out_bytes.add(bytes(s, s->seen_free));  // subtracted by a trim, in use again
    s->local_free = nullptr;
    s->local_len = 0;
    s->seen_free = 0;
    return list;
  }
  // Test before exchanging: an empty list costs a load, not a locked instruction.
  if (s->remote.load(std::memory_order_relaxed) != 0) {
    const std::uint64_t head = s->remote.exchange(0, std::memory_order_acquire);
    pool->remote_frees.add(head_count(head));
    return head_block(head);
  }
  return carve(pool, s);
}

// Tags the exhausted current slab full, unless a remote free just arrived (then false: take it).
bool retire(Pool* pool, Slab* s) noexcept {
  // While full, the owner's own frees into the slab must take the remote path too, so that the
  // first of them, whoever makes it, hands the slab back.
  s->local_owner.store(nullptr, std::memory_order_relaxed);
  std::uint64_t expected = 0;
  // Release: whoever replaces the tag (acquire, push_remote) writes the slab's `next_returned`,
  // which this pool read when the slab was last handed back (take_returned); that read must
  // happen before the write. Nothing else orders them: the thread that frees into the slab may
  // hold its blocks since long before.
  if (s->remote.compare_exchange_strong(expected, kFullTag, std::memory_order_release,
                                        std::memory_order_relaxed)) {
    s->state = SlabState::kFull;
    return true;
  }
  s->local_owner.store(pool, std::memory_order_relaxed);
  return false;
}

Slab* next_slab(Pool* pool, unsigned cls) noexcept {
  take_returned(pool);
  if (Slab* s = pool->partial[cls]) {
    pool->partial[cls] = s->next_partial;
    return s;
  }
  Slab* s = acquire_slab();
  if (s != nullptr) init_slab(pool, s, cls);
  return s;
}

// Pushes a chain of blocks of `s` (head .. tail, n blocks) on its remote list with one CAS.
void push_remote(Slab* s, Block* head, Block* tail, std::uint32_t n) noexcept {
  std::uint64_t old = s->remote.load(std::memory_order_relaxed);
  std::uint64_t next = 0;
  do {
    tail->next = head_block(old);  // null for an empty list and for kFullTag
    next = reinterpret_cast<std::uintptr_t>(head) | (std::uint64_t{head_count(old) + n} << kCountShift);
    // Release: the blocks' contents and links are visible to the owner that takes the list.
    // Acquire: when this replaces kFullTag it reads the owner's release in retire(), so all the
    // owner did with the slab before tagging it happens before the hand-back below: in
    // particular its reading of `next_returned` the last time the slab came back, by this pool
    // or (through the arena's lock) by the slab's previous pool. The same instruction as a
    // release CAS on x86; an acquire fence in the branch below would do too, but
    // ThreadSanitizer does not model fences.
  } while (!s->remote.compare_exchange_weak(old, next, std::memory_order_acq_rel,
                                            std::memory_order_relaxed));
  if (old == kFullTag) {
    // This push replaced the full tag: hand the slab back to its pool, exactly once. Until the
    // CAS below publishes it, the slab is on no list and no other thread touches `next_returned`.
    Pool* owner = s->pool;
    Slab* first = owner->returned.load(std::memory_order_relaxed);
    do {
      s->next_returned = first;
    } while (!owner->returned.compare_exchange_weak(first, s, std::memory_order_release,
                                                    std::memory_order_relaxed));
  }
}

// Puts a chain of blocks of `s` back on the slab: on its local list if `pool` owns and lists
// it, else (another pool's slab, a full slab, or no pool) on its remote list.
void return_run(Pool* pool, Slab* s, Block* head, Block* tail, std::uint32_t n) noexcept {
  if (pool != nullptr && s->local_owner.load(std::memory_order_relaxed) == pool) {
    tail->next = s->local_free;
    s->local_free = head;
    s->local_len += n;
  } else {
    push_remote(s, head, tail, n);
  }
}

// Moves the remote list onto the local list and subtracts every uncounted free.
void collect(Pool* pool, Slab* s) noexcept {
  if (s->remote.load(std::memory_order_relaxed) != 0) {
    const std::uint64_t head = s->remote.exchange(0, std::memory_order_acquire);
    const std::uint32_t n = head_count(head);
    Block* first = head_block(head);
    Block* tail = first;
    for (std::uint32_t i = 1; i < n; ++i) tail = tail->next;
    tail->next = s->local_free;
    s->local_free = first;
    s->local_len += n;
    s->seen_free += n;
    pool->remote_frees.add(n);
    pool->out_bytes.sub(bytes(s, n));
  }
  pool->local_frees.add(s->local_len - s->seen_free);
  pool->out_bytes.sub(bytes(s, s->local_len - s->seen_free));
  s->seen_free = s->local_len;
}

}  // namespace

Block* refill(Pool* pool, unsigned cls) noexcept {
  pool->refills.add(1);
  Bin& bin = pool->bins[cls];
  if (Block* list = bin.freed) {
    bin.freed = nullptr;
    bin.freed_count = 0;
    bin.free = list->next;
    return list;
  }
  for (;;) {
    if (Slab* s = bin.slab) {
      if (Block* list = take_free(pool, s)) {
        bin.free = list->next;
        return list;
      }
      if (!retire(pool, s)) continue;
      bin.slab = nullptr;
    }
    Slab* next = next_slab(pool, cls);
    if (next == nullptr) return nullptr;
    next->state = SlabState::kCurrent;
    bin.slab = next;
  }
}

void give_back(Pool* pool, Block* list) noexcept {
  // Runs of consecutive blocks of one slab go back together: a consumer frees a producer's
  // messages in the order they were allocated, so runs are long.
  while (list != nullptr) {
    Slab* s = slab_of(reinterpret_cast<std::uintptr_t>(list));
    Block* head = list;
    Block* tail = list;
    std::uint32_t n = 1;
    for (list = list->next; list != nullptr && slab_of(reinterpret_cast<std::uintptr_t>(list)) == s;
         list = list->next) {
      tail = list;
      ++n;
    }
    return_run(pool, s, head, tail, n);
  }
}

void take_returned(Pool* pool) noexcept {
  if (pool->returned.load(std::memory_order_relaxed) == nullptr) return;
  Slab* s = pool->returned.exchange(nullptr, std::memory_order_acquire);
  while (s != nullptr) {
    Slab* next = s->next_returned;
    s->local_owner.store(pool, std::memory_order_relaxed);
    if (entirely_free(s)) {
      release(pool, s, false);
    } else {
      s->state = SlabState::kPartial;
      s->next_partial = pool->partial[s->size_class];
      pool->partial[s->size_class] = s;
    }
    s = next;
  }
}

void trim_pool(Pool* pool, bool to_os) noexcept {
  for (Bin& bin : pool->bins) {
    give_back(pool, bin.free);
    give_back(pool, bin.freed);
    bin.free = nullptr;
    bin.freed = nullptr;
    bin.freed_count = 0;
    bin.slab = nullptr;
  }
  // After the bins: giving them back may have handed full slabs back to this very pool.
  take_returned(pool);
  std::fill(std::begin(pool->partial), std::end(pool->partial), nullptr);
  for (Slab* s = pool->owned; s != nullptr;) {
    Slab* next = s->next_owned;
    // A full slab has no free block: nothing was freed into it since it was tagged, or it is on
    // `returned`, from where the next refill or trim picks it up.
    if (s->state != SlabState::kFull) {
      collect(pool, s);
      if (s->carved == s->local_len) {
        release(pool, s, to_os);
      } else {
        s->state = SlabState::kPartial;
        s->next_partial = pool->partial[s->size_class];
        pool->partial[s->size_class] = s;
      }
    }
    s = next;
  }
}

}  // namespace reheap::detail::msg
