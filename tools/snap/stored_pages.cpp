// Reading a full snapshot's heap bytes by address (see stored_pages.h).
#include "stored_pages.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "reheap/snapshot_error.h"
#include "reheap/snapshot_file.h"

namespace reheap::snap {

StoredPages::StoredPages(const std::filesystem::path& file, std::vector<IndexedRun> runs)
    : file_(file), runs_(std::move(runs)), fd_(open_snapshot_file(file)) {}

StoredPages::~StoredPages() { ::close(fd_); }

void StoredPages::read(std::uintptr_t address, void* out, std::size_t size) const {
  auto* bytes = static_cast<unsigned char*>(out);
  std::memset(bytes, 0, size);
  const std::uintptr_t end = address + size;
  // The first run ending after `address`; runs are disjoint and ascending.
  auto it = std::upper_bound(runs_.begin(), runs_.end(), address,
                             [](std::uintptr_t a, const IndexedRun& r) { return a < r.end; });
  for (; it != runs_.end() && it->address < end; ++it) {
    const std::uintptr_t from = std::max(address, it->address);
    const std::uintptr_t to = std::min(end, it->end);
    std::size_t done = 0;
    while (done < to - from) {
      const ssize_t n = ::pread(fd_, bytes + (from - address) + done, to - from - done,
                                static_cast<off_t>(it->offset + (from - it->address) + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        throw SnapshotError(SnapshotErrc::kIo, file_.string() + ": read: " + std::strerror(errno));
      }
      if (n == 0) {
        throw SnapshotError(SnapshotErrc::kTruncated,
                            file_.string() + ": ends inside a page run (changed while read?)");
      }
      done += static_cast<std::size_t>(n);
    }
  }
}

}  // namespace reheap::snap
