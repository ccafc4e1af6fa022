#include "report.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

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

}  // namespace

void fatal(const char* format, ...) noexcept {
  va_list args;
  va_start(args, format);
  vprint(format, args);
  va_end(args);
  std::abort();
}

void report_misuse(Misuse kind, const void* ptr, std::uint32_t owner,
                   std::uint32_t current) noexcept {
  if constexpr (!kChecks) {
    zone().count_ignored_free();
    return;
  }
  switch (kind) {
    case Misuse::kDoubleFree:
      fatal("double free of %p in heap %u", ptr, owner);
    case Misuse::kNotCurrentHeap: {
      char current_name[32] = "none";
      if (current != 0) std::snprintf(current_name, sizeof current_name, "heap %u", current);
      fatal("free of %p: the block belongs to heap %u, which is not the current heap (current: "
            "%s); make its heap current with reheap::HeapScope before deleting objects that "
            "live in it",
            ptr, owner, current_name);
    }
    case Misuse::kNeverHandedOut:
      fatal("free of %p: heap %u never handed out a block at this address", ptr, owner);
    case Misuse::kNoLiveHeap:
      fatal("free of %p: the address is in the reheap zone but in no live heap (was its heap "
            "destroyed before the object?)",
            ptr);
  }
  fatal("unknown misuse of %p", ptr);
}

}  // namespace reheap::detail
