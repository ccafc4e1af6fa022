#include "os/message_os.h"

#include <sys/mman.h>

namespace reheap::detail::msg::os {

void* reserve(std::size_t size, std::size_t alignment) noexcept {
  // Over-reserve by the alignment and cut the misaligned head and tail off, so the range is
  // aligned wherever the kernel put it.
  const std::size_t padded = size + alignment;
  void* raw = ::mmap(nullptr, padded, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + alignment - 1) & ~(std::uintptr_t{alignment} - 1);
  if (aligned > start) ::munmap(raw, aligned - start);
  const std::uintptr_t end = start + padded;
  if (end > aligned + size) ::munmap(reinterpret_cast<void*>(aligned + size), end - aligned - size);
  auto* base = reinterpret_cast<void*>(aligned);
  // Huge pages would commit 2 MiB at the first touch of a slab and keep it committed after a
  // slab is discarded; message memory stays at page granularity. Failure (no THP) is harmless.
  ::madvise(base, size, MADV_NOHUGEPAGE);
  return base;
}

bool commit(void* base, std::size_t size) noexcept {
  return ::mprotect(base, size, PROT_READ | PROT_WRITE) == 0;
}

void decommit(void* base, std::size_t size) noexcept { ::madvise(base, size, MADV_DONTNEED); }

void* map(std::size_t size) noexcept {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void unmap(void* base, std::size_t size) noexcept { ::munmap(base, size); }

}  // namespace reheap::detail::msg::os
