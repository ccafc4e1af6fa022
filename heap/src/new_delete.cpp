// The replacement of every global operator new and delete form.
//
// new:    the current heap's fast path; if no heap is current, or the request needs the slow path
//         and the heap cannot meet it, new_slow decides: system allocator, new_handler, bad_alloc.
// delete: by address. A class block of the current heap is pushed on its free list right here;
//         anything else in the zone goes to the heap slow path (page runs, misuse reports);
//         addresses outside the zone go to free(3).
// The size and alignment arguments of sized/aligned delete are not needed: the address says all.
#include <cstdlib>
#include <new>

#include "current.h"
#include "heap_fast.h"

namespace {

using reheap::detail::g_no_heap;
using reheap::detail::HeapState;
using reheap::detail::t_current;

void* system_alloc(std::size_t size, std::size_t alignment) noexcept {
  if (size == 0) size = 1;
  if (alignment <= alignof(std::max_align_t)) return std::malloc(size);
  void* p = nullptr;
  return ::posix_memalign(&p, alignment, size) == 0 ? p : nullptr;
}

// Null only when the new_handler gives up (nothrow) or is absent and `nothrow` is set.
// `tried`: the caller already made the first attempt (so a failure is counted once).
REHEAP_SLOW_PATH void* new_slow(std::size_t size, std::size_t alignment, bool nothrow,
                                bool tried = false) {
  for (;; tried = false) {
    if (!tried) {
      HeapState* h = t_current;
      void* p = nullptr;
      if (h == &g_no_heap) {
        p = system_alloc(size, alignment);
      } else if (size <= reheap::kMaxClassSize && alignment <= alignof(std::max_align_t)) {
        // fast_new's empty free list: carve here rather than through alloc_slow's dispatch.
        p = reheap::detail::class_alloc(h, reheap::size_class(size));
      } else {
        p = reheap::detail::alloc_slow(h, size, alignment);
      }
      if (p != nullptr) return p;
    }
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) {
      if (nothrow) return nullptr;
      throw std::bad_alloc();
    }
    if (nothrow) {
      try {
        handler();
      } catch (...) {
        return nullptr;
      }
    } else {
      handler();
    }
  }
}

// Requests above the class sizes go straight to the page runs: one call, not three layers.
REHEAP_SLOW_PATH void* page_run_new(HeapState* h, std::size_t size, bool nothrow) {
  if (h == &g_no_heap) return new_slow(size, alignof(std::max_align_t), nothrow);
  if (void* p = reheap::detail::alloc_pages(h, size, alignof(std::max_align_t))) return p;
  return new_slow(size, alignof(std::max_align_t), nothrow, true);
}

[[gnu::always_inline]] inline void* fast_new(std::size_t size, bool nothrow) {
  HeapState* h = t_current;
  if (size <= reheap::kMaxClassSize) [[likely]] {
    // Pop, else bump the lane's cursor (a young heap's blocks: seed 000's pools of 100 objects
    // cost 2.6 us each through the slow path); anything else goes to new_slow as a tail call,
    // which keeps this path free of a stack frame (calling carve_block here and testing its
    // result costs ~4 instructions more).
    const unsigned cls = reheap::detail::fast_size_class(size);
    if (void* p = reheap::detail::pop_free(h, cls)) [[likely]] return p;
    if (void* p = reheap::detail::bump_carve(h, cls)) return p;
    return new_slow(size, alignof(std::max_align_t), nothrow);
  }
  return page_run_new(h, size, nothrow);
}

[[gnu::always_inline]] inline void* aligned_new(std::size_t size, std::align_val_t al, bool nothrow) {
  const auto alignment = static_cast<std::size_t>(al);
  if (alignment <= alignof(std::max_align_t)) return fast_new(size < alignment ? alignment : size, nothrow);
  return new_slow(size, alignment, nothrow);
}

[[gnu::always_inline]] inline void fast_delete(void* p) noexcept {
  reheap::detail::heap_free(t_current, p);
}

}  // namespace

void* operator new(std::size_t size) { return fast_new(size, false); }
void* operator new[](std::size_t size) { return fast_new(size, false); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return fast_new(size, true); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return fast_new(size, true); }
void* operator new(std::size_t size, std::align_val_t al) { return aligned_new(size, al, false); }
void* operator new[](std::size_t size, std::align_val_t al) { return aligned_new(size, al, false); }
void* operator new(std::size_t size, std::align_val_t al, const std::nothrow_t&) noexcept {
  return aligned_new(size, al, true);
}
void* operator new[](std::size_t size, std::align_val_t al, const std::nothrow_t&) noexcept {
  return aligned_new(size, al, true);
}

void operator delete(void* p) noexcept { fast_delete(p); }
void operator delete[](void* p) noexcept { fast_delete(p); }
void operator delete(void* p, std::size_t) noexcept { fast_delete(p); }
void operator delete[](void* p, std::size_t) noexcept { fast_delete(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { fast_delete(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { fast_delete(p); }
void operator delete(void* p, std::align_val_t) noexcept { fast_delete(p); }
void operator delete[](void* p, std::align_val_t) noexcept { fast_delete(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { fast_delete(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { fast_delete(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { fast_delete(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { fast_delete(p); }
