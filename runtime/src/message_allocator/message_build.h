// Build switches of the message allocator: checked builds, fast/slow path attributes, and what
// AddressSanitizer is told about blocks.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/lsan_interface.h>
#endif

// Fast paths are inlined into the public entry points; slow paths are kept out of them, so the
// fast paths stay a few instructions with no stack frame.
#define REHEAP_MSG_FAST_PATH [[gnu::always_inline]] inline
#define REHEAP_MSG_SLOW_PATH [[gnu::noinline, gnu::cold]]

namespace reheap::detail::msg {

#ifdef REHEAP_CHECKS
inline constexpr bool kChecks = true;
#else
inline constexpr bool kChecks = false;
#endif

// A free block is poisoned but for its first word (the free-list link), and unpoisoned when it
// is handed out, so a use after free of a message is reported. Costs nothing outside ASan.
inline void poison_free_block(void* p, std::size_t size) noexcept {
#if defined(__SANITIZE_ADDRESS__)
  ASAN_POISON_MEMORY_REGION(static_cast<char*>(p) + sizeof(void*), size - sizeof(void*));
#else
  (void)p, (void)size;
#endif
}

inline void unpoison(void* p, std::size_t size) noexcept {
#if defined(__SANITIZE_ADDRESS__)
  ASAN_UNPOISON_MEMORY_REGION(p, size);
#else
  (void)p, (void)size;
#endif
}

// LeakSanitizer scans only memory it knows; message blocks may hold the only pointer to memory
// from malloc, so the arena is registered as a root region (LSan scans its readable pages).
inline void register_root_region(const void* p, std::size_t size) noexcept {
#if defined(__SANITIZE_ADDRESS__)
  __lsan_register_root_region(p, size);
#else
  (void)p, (void)size;
#endif
}

}  // namespace reheap::detail::msg
