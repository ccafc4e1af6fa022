// Heap's life cycle (create, destroy, owner lookup), its public entry points, and the slow paths
// behind the fast ones in heap_fast.h.
#include <bit>
#include <cstdlib>
#include <cstring>
#include <new>

#include "current.h"
#include "heap_cache.h"
#include "heap_fast.h"
#include "heap_records.h"
#include "report.h"

namespace reheap {
namespace detail {

REHEAP_SLOW_PATH void* alloc_slow(HeapState* h, std::size_t size, std::size_t alignment) noexcept {
  if (h->id == kNoHeapId) return nullptr;
  if (alignment > kMaxAlignment) {
    ++h->failed;
    return nullptr;
  }
  if (size <= kMaxClassSize && alignment <= alignof(std::max_align_t)) {
    // The default alignment: blocks of 16 bytes or more have it, smaller ones need only 8
    // (malloc's rule). Over-aligned callers ask for at least `alignment` bytes (Heap::allocate).
    return class_alloc(h, size_class(size));
  }
  if (size <= kMaxClassSize && alignment <= kPageSize) {
    // Class blocks lie at lane start + i * size with lanes 64 KiB aligned, so a block is aligned
    // to the largest power of two dividing its size.
    unsigned cls = size_class(size < alignment ? alignment : size);
    while (cls < kNumClasses && kClassSize[cls] % alignment != 0) ++cls;
    if (cls < kNumClasses) return class_alloc(h, cls);
  }
  return alloc_pages(h, size, alignment);
}

REHEAP_SLOW_PATH void free_slow(HeapState* h, void* p) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (!ZoneImpl::contains(a)) {
    std::free(p);  // the system allocator's block (or null)
    return;
  }
  const HeapId owner = ZoneImpl::owner_of(a);
  // A page run of this heap first: the one common case here. The class half's lanes of this heap
  // that reach this point are its header and shadow lanes, never handed out (reported below).
  if (owner == h->id && a - g_zone.base.load(std::memory_order_relaxed) >=
                            g_zone.class_span.load(std::memory_order_relaxed)) [[likely]] {
    return free_pages(h, p);
  }
  const HeapId current = h->id == kNoHeapId ? 0 : h->id;
  if (owner == (h->id | kTombstone)) {
    return report_misuse(Misuse::kDoubleFree, p, h->id, current);  // a freed huge block
  }
  if (owner & kTombstone) return report_misuse(Misuse::kDestroyedHeap, p, owner & ~kTombstone, current);
  if (owner == 0) return report_misuse(Misuse::kNoLiveHeap, p, 0, current);
  if (owner != h->id) return report_misuse(Misuse::kNotCurrentHeap, p, owner, current);
  if (a - g_zone.base.load(std::memory_order_relaxed) <
      g_zone.class_span.load(std::memory_order_relaxed)) {
    return report_misuse(Misuse::kNeverHandedOut, p, owner, current);  // a header or shadow lane
  }
  free_pages(h, p);
}

#if defined(__SANITIZE_ADDRESS__)
void unpoison_free_blocks(HeapState* h) noexcept {
  // Freed class blocks are poisoned; their chunks are about to be reused by other heaps.
  for (unsigned cls = 0; cls < kNumClasses; ++cls) {
    for (void* p = h->free[cls]; p != nullptr; p = *static_cast<void**>(p)) {
      REHEAP_UNPOISON(p, kClassSize[cls]);
    }
  }
}

void poison_free_blocks(HeapState* h) noexcept {
  for (unsigned cls = 0; cls < kNumClasses; ++cls) {
    for (void* p = h->free[cls]; p != nullptr; p = *static_cast<void**>(p)) {
      REHEAP_POISON(static_cast<char*>(p) + sizeof(void*), kClassSize[cls] - sizeof(void*));
    }
  }
}
#else
void unpoison_free_blocks(HeapState*) noexcept {}
void poison_free_blocks(HeapState*) noexcept {}
#endif

ChunkHeader* discard_all_but_state(HeapState* h, void* context, ChunkRunDone done) noexcept {
  const HeapId id = h->id;
  if (t_current == h) t_current = &g_no_heap;
  ZoneImpl& z = zone();
  if (ChunkObserver* o = z.observer(id)) {
    z.set_observer(id, nullptr);
    o->heap_destroyed();
  }
  unpoison_free_blocks(h);
  forget_retained(h);
  for (ChunkHeader* c = h->large_head; c != nullptr;) {
    ChunkHeader* next = c->next;
    const std::size_t chunks = owned_run_chunks(h, c);
    release_chunk_pages(h, c, false);
    done(context, reinterpret_cast<std::uintptr_t>(c), chunks, id);
    c = next;
  }
  ChunkHeader* first = h->class_head;
  for (ChunkHeader* c = first->next; c != nullptr;) {
    ChunkHeader* next = c->next;
    release_chunk_pages(h, c, true);
    done(context, chunk_of(c, true), 1, id);
    c = next;
  }
  return first;
}

void discard_heap(HeapState* h, void* context, ChunkRunDone done) noexcept {
  const HeapId id = h->id;
  // The state lives in the first class chunk: discard that one last.
  ChunkHeader* first = discard_all_but_state(h, context, done);
  const std::uintptr_t first_chunk = chunk_of(first, true);
  release_chunk_pages(h, first, true);  // h is zero from here on
  done(context, first_chunk, 1, id);
  zone().heap_destroyed();
}

}  // namespace detail

using detail::HeapState;
using detail::state;
using detail::ZoneImpl;

void HeapDeleter::operator()(Heap* heap) const noexcept { Heap::destroy(heap); }

HeapPtr Heap::create(const HeapConfig& config) {
  detail::ZoneImpl& zone = detail::zone();
  zone.ensure_reserved();
  std::uint64_t mprotect_calls = 0;
  HeapState* h = detail::reuse_cached_heap();
  std::uintptr_t chunk = 0;
  if (h != nullptr) {
    chunk = ZoneImpl::chunk_base(reinterpret_cast<std::uintptr_t>(h));
  } else {
    chunk = zone.acquire(detail::Half::kClass, 1, 0, &mprotect_calls);
    if (chunk == 0) throw std::bad_alloc();
    h = new (detail::heap_at(chunk)) HeapState(ZoneImpl::owner_of(chunk));
  }
  detail::ChunkHeader* header = detail::class_header(chunk);
  header->kind = detail::ChunkKind::kClass;
  header->owner = h->id;
  header->run_chunks = 1;
  h->limit = config.limit_bytes;
  detail::init_retention(h);
  h->committed = kPageSize;  // the page holding the chunk header and this state
  h->class_head = h->class_tail = header;
  h->class_chunks = 1;
  detail::note_created(h, mprotect_calls);
  zone.heap_created();
  return HeapPtr(h);
}

void Heap::destroy(Heap* heap) noexcept {
  if (heap == nullptr) return;
  detail::forget_heap_records(state(heap)->id);
  if (detail::cache_heap(state(heap))) return;
  detail::discard_heap(state(heap), nullptr,
                       [](void*, std::uintptr_t first, std::size_t count, detail::HeapId owner) {
                         detail::zone().release(first, count, owner);
                       });
}

Heap* Heap::owner_of(const void* p) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (!ZoneImpl::contains(a)) return nullptr;
  const detail::HeapId owner = ZoneImpl::owner_of(a);
  if (owner == 0 || (owner & detail::kTombstone)) return nullptr;
  return detail::heap_at(ZoneImpl::chunk_address(detail::first_chunk_of(owner)));
}

void* Heap::allocate(std::size_t size) noexcept { return detail::heap_alloc(state(this), size); }

void* Heap::allocate(std::size_t size, std::size_t alignment) noexcept {
  if (!std::has_single_bit(alignment)) return nullptr;
  // A class block is aligned to the largest power of two dividing its size, so asking for at
  // least `alignment` bytes gives an aligned block of the small classes too (8 -> 16).
  if (alignment <= alignof(std::max_align_t)) {
    return detail::heap_alloc(state(this), size < alignment ? alignment : size);
  }
  return detail::alloc_slow(state(this), size, alignment);
}

void Heap::deallocate(void* p) noexcept {
  if (p == nullptr) return;
  if (!ZoneImpl::contains(reinterpret_cast<std::uintptr_t>(p))) {
    return detail::report_misuse(detail::Misuse::kNeverHandedOut, p, id(), id());
  }
  detail::heap_free(state(this), p);
}

std::size_t Heap::usable_size(const void* p) const noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (p == nullptr || !owns(p)) return 0;
  if (const unsigned cls = detail::class_of_address(a); detail::is_own_class_block(state(this), a, cls)) {
    return kClassSize[cls];
  }
  if (a - detail::g_zone.base.load(std::memory_order_relaxed) <
      detail::g_zone.class_span.load(std::memory_order_relaxed)) {
    return 0;
  }
  return detail::page_block_size(state(this), p);
}

void* Heap::reallocate(void* p, std::size_t new_size) noexcept {
  if (p == nullptr) return allocate(new_size);
  if (new_size == 0) {
    deallocate(p);
    return nullptr;
  }
  HeapState* h = state(this);
  const std::size_t old_size = usable_size(p);
  if (old_size == 0) {
    // Not a live block of this heap: report it as freeing it would (free_slow frees nothing
    // that another heap, or no heap, owns).
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    if (ZoneImpl::contains(a) && ZoneImpl::owner_of(a) != h->id) {
      detail::free_slow(h, p);
    } else {
      detail::report_misuse(detail::Misuse::kNeverHandedOut, p, h->id, h->id);
    }
    return nullptr;
  }
  if (const auto a = reinterpret_cast<std::uintptr_t>(p); detail::is_own_class_block(h, a, detail::class_of_address(a))) {
    if (new_size <= old_size) return p;
  } else if (void* q = detail::realloc_pages(h, p, new_size)) {
    return q;
  }
  void* q = allocate(new_size);
  if (q == nullptr) return nullptr;
  std::memcpy(q, p, old_size < new_size ? old_size : new_size);
  deallocate(p);
  return q;
}

std::uint64_t Heap::id() const noexcept { return state(this)->id; }
void Heap::set_root(void* root) noexcept { state(this)->root = root; }
void* Heap::root() const noexcept { return state(this)->root; }
std::size_t Heap::limit() const noexcept { return state(this)->limit; }
void Heap::set_limit(std::size_t limit_bytes) noexcept { state(this)->limit = limit_bytes; }

}  // namespace reheap
