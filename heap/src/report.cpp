#include "report.h"

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "heap_records.h"
#include "layout.h"
#include "zone_impl.h"

namespace reheap::detail {
namespace {

// Formats into a stack buffer and writes with write(2): reporting must not allocate, since it
// runs inside operator delete.
void vprint(const char* format, va_list args) noexcept {
  char line[512];
  int n = std::snprintf(line, sizeof line, "reheap: ");
  int m = std::vsnprintf(line + n, sizeof line - static_cast<std::size_t>(n) - 1, format, args);
  std::size_t len = static_cast<std::size_t>(n) + (m > 0 ? static_cast<std::size_t>(m) : 0);
  if (len > sizeof line - 2) len = sizeof line - 2;
  line[len++] = '\n';
  for (std::size_t done = 0; done < len;) {
    ssize_t w = ::write(STDERR_FILENO, line + done, len - done);
    if (w <= 0) break;
    done += static_cast<std::size_t>(w);
  }
}

void print(const char* format, ...) noexcept {
  va_list args;
  va_start(args, format);
  vprint(format, args);
  va_end(args);
}

}  // namespace

void fatal(const char* format, ...) noexcept {
  va_list args;
  va_start(args, format);
  vprint(format, args);
  va_end(args);
  std::abort();
}

namespace {

char* name_current(char (&buffer)[48], std::uint64_t current) noexcept {
  std::snprintf(buffer, sizeof buffer, current == 0 ? "none" : "heap %llu",
                static_cast<unsigned long long>(current));
  return buffer;
}

// Release builds ignore a free whose heap is not current, and count it. The first one is said on
// stderr too: it is never a legitimate call (unlike a stale pointer's delete during process exit),
// and what it leaves behind (the block still allocated, and an object that replaced it, as a
// std::string assigned outside a HeapScope, now pointing outside its heap) otherwise shows only
// later, in another process that restores the heap.
void warn_once_not_current(const void* ptr, std::uint64_t owner, std::uint64_t current) noexcept {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true, std::memory_order_relaxed)) return;
  char current_name[48];
  print("free of %p ignored: the block belongs to heap %llu, which is not the current heap "
        "(current: %s); make its heap current with reheap::HeapScope before changing or deleting "
        "objects that live in it. The block stays allocated, and saves of heap %llu are refused from "
        "now on (an object in it may point outside it); reported once, the rest are counted in "
        "ZoneStats::ignored_frees and HeapStats::foreign_frees; a build with -DREHEAP_CHECKS=ON "
        "stops at the first",
        ptr, static_cast<unsigned long long>(owner), name_current(current_name, current),
        static_cast<unsigned long long>(owner));
}

}  // namespace

void report_misuse(Misuse kind, const void* ptr, std::uint64_t owner,
                   std::uint64_t current) noexcept {
  if constexpr (!kChecks) {
    zone().count_ignored_free();
    if (kind == Misuse::kNotCurrentHeap) {
      count_foreign_free(owner);
      warn_once_not_current(ptr, owner, current);
    }
    return;
  }
  const auto id = static_cast<unsigned long long>(owner);
  switch (kind) {
    case Misuse::kDoubleFree:
      fatal("double free of %p in heap %llu", ptr, id);
    case Misuse::kNotCurrentHeap: {
      char current_name[48];
      fatal("free of %p: the block belongs to heap %llu, which is not the current heap (current: "
            "%s); make its heap current with reheap::HeapScope before deleting objects that "
            "live in it",
            ptr, id, name_current(current_name, current));
    }
    case Misuse::kNeverHandedOut:
      fatal("free of %p: heap %llu never handed out a block at this address", ptr, id);
    case Misuse::kNoLiveHeap:
      fatal("free of %p: the address is in the reheap zone but in no live heap (was its heap "
            "destroyed before the object?)",
            ptr);
    case Misuse::kDestroyedHeap:
      fatal("free of %p: the address is in the reheap zone but in no live heap: heap %llu (first "
            "chunk %u, generation %u) gave it back (the heap was destroyed, or the block was a "
            "freed huge block); the pointer is stale",
            ptr, id, first_chunk_of(owner), generation_of(owner));
  }
  fatal("unknown misuse of %p", ptr);
}

}  // namespace reheap::detail
