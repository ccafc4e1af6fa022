#include "message_allocator/message_report.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace reheap::detail::msg {

void fatal(const char* format, ...) noexcept {
  // A stack buffer and write(2): no allocation, no stdio lock.
  char line[512];
  const int n = std::snprintf(line, sizeof line, "reheap: ");
  va_list args;
  va_start(args, format);
  const int m = std::vsnprintf(line + n, sizeof line - static_cast<std::size_t>(n) - 1, format, args);
  va_end(args);
  std::size_t len = static_cast<std::size_t>(n) + (m > 0 ? static_cast<std::size_t>(m) : 0);
  if (len > sizeof line - 2) len = sizeof line - 2;
  line[len++] = '\n';
  for (std::size_t done = 0; done < len;) {
    const ssize_t w = ::write(STDERR_FILENO, line + done, len - done);
    if (w <= 0) break;
    done += static_cast<std::size_t>(w);
  }
  std::abort();
}

}  // namespace reheap::detail::msg
