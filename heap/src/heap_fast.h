// The allocation and free fast paths, shared by Heap's member functions and the global operator
// new/delete. Each is one test on the hot path; everything else is in the noinline slow paths.
//
//   allocate: size -> class (bit arithmetic) -> pop the class free list
//             else carve_block (class_lanes.cpp) or alloc_pages (page_runs.cpp)
//   free:     address -> in the class half and a class lane of a chunk this heap owns
//             -> not the list's head (a double free) -> push on the class free list,
//             else free_slow (heap.cpp)
#pragma once

#include <cstddef>
#include <cstdint>

#include "class_table.h"
#include "heap_state.h"
#include "layout.h"
#include "zone_impl.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define REHEAP_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define REHEAP_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define REHEAP_POISON(p, n) ((void)(p), (void)(n))
#define REHEAP_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define REHEAP_FAST_PATH [[gnu::always_inline]] inline
#define REHEAP_SLOW_PATH [[gnu::noinline, gnu::cold]]

namespace reheap::detail {

void* alloc_slow(HeapState* h, std::size_t size, std::size_t alignment) noexcept;
void free_slow(HeapState* h, void* p) noexcept;

// Pops a free block of class `cls`, or null if the free list is empty.
REHEAP_FAST_PATH void* pop_free(HeapState* h, unsigned cls) noexcept {
  void* p = h->free[cls];
  if (p != nullptr) [[likely]] {
    h->free[cls] = *static_cast<void**>(p);
    REHEAP_UNPOISON(p, kClassSize[cls]);
    if constexpr (kChecks) mark_class_allocated(p);
  }
  return p;
}

// Carves the next block of class `cls` from the committed window of its lane, or null when the
// window is used up (carve_block then moves the window). Never-used pages of a fresh heap, so
// a heap's first blocks (a short-lived heap's only ones) cost a bump, not the slow path.
REHEAP_FAST_PATH void* bump_carve(HeapState* h, unsigned cls) noexcept {
  ClassCursor& k = h->cursor[cls];
  const auto cur = reinterpret_cast<std::uintptr_t>(k.cur);
  if (cur + kClassSize[cls] > reinterpret_cast<std::uintptr_t>(k.limit)) return nullptr;
  k.cur += kClassSize[cls];
  ++k.carved;
  return reinterpret_cast<void*>(cur);
}

// Pops a block of class `cls`, or carves one; null when the heap cannot grow.
REHEAP_FAST_PATH void* class_alloc(HeapState* h, unsigned cls) noexcept {
  if (void* p = pop_free(h, cls)) [[likely]] return p;
  if (void* p = bump_carve(h, cls)) return p;
  return carve_block(h, cls);
}

// Returns null only when the request cannot be met; `h` may be &g_no_heap (then always null).
REHEAP_FAST_PATH void* heap_alloc(HeapState* h, std::size_t size) noexcept {
  if (size <= kMaxClassSize) [[likely]] return class_alloc(h, fast_size_class(size));
  return alloc_slow(h, size, alignof(std::max_align_t));
}

// True if `a`, whose class_of_address is `cls`, is a class block of a chunk owned by `h`.
REHEAP_FAST_PATH bool is_own_class_block(const HeapState* h, std::uintptr_t a, unsigned cls) noexcept {
  const std::uintptr_t off = a - g_zone.base.load(std::memory_order_relaxed);
  return off < g_zone.class_span.load(std::memory_order_relaxed) && cls < kNumClasses &&
         g_zone.owners.load(std::memory_order_relaxed)[off >> kChunkShift].load(
             std::memory_order_relaxed) == h->id;
}

REHEAP_FAST_PATH void heap_free(HeapState* h, void* p) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const unsigned cls = class_of_address(a);
  if (is_own_class_block(h, a, cls)) [[likely]] {
    if constexpr (kChecks) check_class_free(h, p, cls);
    void* const head = h->free[cls];
    // The one check release builds afford: freeing the block freed last of its class again (the
    // usual double free) would make the list hand it out twice.
    if (p == head) [[unlikely]] return double_free_at_head(h, p);
    *static_cast<void**>(p) = head;
    h->free[cls] = p;
    REHEAP_POISON(static_cast<char*>(p) + sizeof(void*), kClassSize[cls] - sizeof(void*));
    return;
  }
  free_slow(h, p);
}

}  // namespace reheap::detail
