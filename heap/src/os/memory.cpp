#include "memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

namespace reheap::detail::os {

int reserve_fixed(std::uintptr_t base, std::size_t size) noexcept {
  void* want = reinterpret_cast<void*>(base);
  void* got = ::mmap(want, size, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (got == MAP_FAILED) return errno;
  if (got != want) {
    // Kernels before 4.17 ignore MAP_FIXED_NOREPLACE and treat the address as a hint.
    ::munmap(got, size);
    return EEXIST;
  }
  // Huge pages would commit 2 MiB on the first touch of a lane; an idle heap must stay small.
  // Failure is harmless (THP may be compiled out), so it is not reported.
  ::madvise(want, size, MADV_NOHUGEPAGE);
  return 0;
}

int make_accessible(std::uintptr_t base, std::size_t size) noexcept {
  return ::mprotect(reinterpret_cast<void*>(base), size, PROT_READ | PROT_WRITE) == 0 ? 0 : errno;
}

int make_inaccessible(std::uintptr_t base, std::size_t size) noexcept {
  return ::mprotect(reinterpret_cast<void*>(base), size, PROT_NONE) == 0 ? 0 : errno;
}

int discard(std::uintptr_t base, std::size_t size) noexcept {
  return ::madvise(reinterpret_cast<void*>(base), size, MADV_DONTNEED) == 0 ? 0 : errno;
}

int populate(std::uintptr_t base, std::size_t size) noexcept {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;
#endif
  return ::madvise(reinterpret_cast<void*>(base), size, MADV_POPULATE_WRITE) == 0 ? 0 : errno;
}

void* map_table(std::size_t size) noexcept {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void unmap_table(void* table, std::size_t size) noexcept { ::munmap(table, size); }

std::size_t page_size() noexcept { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

std::uint64_t coarse_now_ms() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000 + static_cast<std::uint64_t>(ts.tv_nsec) / 1000000;
}

}  // namespace reheap::detail::os
