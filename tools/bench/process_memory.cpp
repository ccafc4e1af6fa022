#include "process_memory.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace bench {
namespace {

// Reads the "<key>:   <n> kB" line of /proc/self/status into a stack buffer and parses it.
std::size_t status_field_bytes(const char* key) noexcept {
  char buf[8192];
  const int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  std::size_t len = 0;
  for (;;) {
    const ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
    if (n <= 0) break;
    len += static_cast<std::size_t>(n);
    if (len == sizeof(buf) - 1) break;
  }
  close(fd);
  buf[len] = '\0';
  const std::size_t key_len = std::strlen(key);
  for (const char* line = buf; *line != '\0';) {
    if (std::strncmp(line, key, key_len) == 0 && line[key_len] == ':') {
      return static_cast<std::size_t>(std::strtoull(line + key_len + 1, nullptr, 10)) * 1024u;
    }
    const char* next = std::strchr(line, '\n');
    if (next == nullptr) break;
    line = next + 1;
  }
  return 0;
}

}  // namespace

std::size_t current_rss_bytes() noexcept { return status_field_bytes("VmRSS"); }

std::size_t peak_rss_bytes() noexcept { return status_field_bytes("VmHWM"); }

std::size_t page_table_bytes() noexcept { return status_field_bytes("VmPTE"); }

bool reset_peak_rss() noexcept {
  const int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, "5", 1) == 1;
  close(fd);
  return ok;
}

}  // namespace bench
