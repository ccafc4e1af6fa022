// The page-by-page comparison of two full snapshots (see page_diff.h).
#include "page_diff.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "command.h"
#include "progress.h"
#include "reheap/snapshot_error.h"
#include "reheap/snapshot_file.h"

namespace reheap::snap {
namespace {

constexpr std::uint64_t kMaxRunBytes = std::uint64_t{64} << 20;

// Where a run of A's pages lies in A's file.
struct IndexedRun {
  std::uintptr_t address = 0;
  std::uintptr_t end = 0;
  std::uint64_t offset = 0;
};

// A's page data, read back by file offset. Pages are asked for in ascending order, so a read-ahead
// window of 1 MiB turns 256 page reads into one pread().
class PageFile {
 public:
  PageFile(const std::filesystem::path& file, std::uint32_t page_size)
      : file_(file), page_size_(page_size), fd_(open_snapshot_file(file)) {}
  ~PageFile() { ::close(fd_); }
  PageFile(const PageFile&) = delete;
  PageFile& operator=(const PageFile&) = delete;

  // The page at `offset`; `run_end` is the end offset of its run's data (the window stops there).
  const unsigned char* page(std::uint64_t offset, std::uint64_t run_end) {
    if (offset < window_offset_ || offset + page_size_ > window_offset_ + window_.size()) {
      const std::uint64_t length = std::min<std::uint64_t>(kWindow, run_end - offset);
      window_.resize(length);
      std::size_t done = 0;
      while (done < length) {
        const ssize_t n = ::pread(fd_, window_.data() + done, length - done,
                                  static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail("read");
        if (n == 0) {
          throw SnapshotError(SnapshotErrc::kTruncated,
                              file_.string() + ": ends inside a page run (changed while read?)");
        }
        done += static_cast<std::size_t>(n);
      }
      window_offset_ = offset;
    }
    return window_.data() + (offset - window_offset_);
  }

 private:
  static constexpr std::uint64_t kWindow = 1u << 20;

  [[noreturn]] void fail(const char* what) const {
    throw SnapshotError(SnapshotErrc::kIo,
                        file_.string() + ": " + what + ": " + std::strerror(errno));
  }

  std::filesystem::path file_;
  std::uint32_t page_size_;
  int fd_;
  std::vector<unsigned char> window_;
  std::uint64_t window_offset_ = 0;
};

std::uint64_t differing_bytes(const unsigned char* a, const unsigned char* b, std::size_t size) {
  std::uint64_t count = 0;
  for (std::size_t i = 0; i < size; i += 8) {
    std::uint64_t x = 0;
    std::uint64_t y = 0;
    std::memcpy(&x, a + i, 8);
    std::memcpy(&y, b + i, 8);
    for (std::uint64_t d = x ^ y; d != 0; d >>= 8) count += (d & 0xFF) != 0;
  }
  return count;
}

std::uint64_t nonzero_bytes(const unsigned char* p, std::size_t size) {
  return static_cast<std::uint64_t>(size - static_cast<std::size_t>(std::count(p, p + size, 0)));
}

void require_full(const SnapshotReader& reader) {
  if (reader.header().kind != SnapshotKind::kFull) {
    throw std::runtime_error(reader.name() + ": an increment; diff compares full snapshots");
  }
}

std::vector<IndexedRun> index_runs(const std::filesystem::path& file, bool force_progress) {
  SnapshotReader reader(file);
  require_full(reader);
  Progress progress("index " + file.filename().string(), reader.size(), force_progress);
  const std::uint64_t page_size = reader.header().page_size;
  std::vector<IndexedRun> runs;
  PageRun run;
  while (reader.next(run)) {
    if (!run.zero) {
      runs.push_back({run.address, run.address + run.pages * page_size, run.offset});
      reader.skip_data();
    }
    progress.update(reader.position());
  }
  return runs;
}

// The merge: B's pages arrive in order from its reader; A's come from its index. Every A page
// below the current B page that B did not store is "only in A".
class Merger {
 public:
  Merger(const std::vector<IndexedRun>& a, PageFile& a_data, PageDiff& out)
      : a_(a), a_data_(a_data), out_(out), page_size_(out.page_size) {}

  void page_b(std::uintptr_t address, const unsigned char* data) {
    flush_a_below(address);
    ++out_.pages_b;
    if (next_ < a_.size() && a_[next_].address <= address && address < a_[next_].end) {
      const unsigned char* a = a_data_.page(offset_in_a(address), data_end_of_a());
      ++out_.pages_a;
      const std::uint64_t bytes = differing_bytes(a, data, page_size_);
      if (bytes == 0) {
        ++out_.same;
      } else {
        ++out_.changed;
        out_.changed_bytes += bytes;
        add(address, RangeKind::kChanged, bytes);
      }
    } else {
      const std::uint64_t bytes = nonzero_bytes(data, page_size_);
      ++out_.only_b;
      out_.only_bytes += bytes;
      add(address, RangeKind::kOnlyB, bytes);
    }
    done_ = address + page_size_;
  }

  void finish() { flush_a_below(UINTPTR_MAX); }

 private:
  std::uint64_t offset_in_a(std::uintptr_t address) const {
    return a_[next_].offset + (address - a_[next_].address);
  }
  std::uint64_t data_end_of_a() const {
    return a_[next_].offset + (a_[next_].end - a_[next_].address);
  }

  // Accounts A's pages in [done_, limit) as only in A, and advances past A runs ending there.
  void flush_a_below(std::uintptr_t limit) {
    while (next_ < a_.size() && a_[next_].address < limit) {
      const IndexedRun& run = a_[next_];
      for (std::uintptr_t p = std::max(done_, run.address); p < std::min(limit, run.end);
           p += page_size_) {
        const std::uint64_t bytes = nonzero_bytes(a_data_.page(offset_in_a(p), data_end_of_a()),
                                                  page_size_);
        ++out_.pages_a;
        ++out_.only_a;
        out_.only_bytes += bytes;
        add(p, RangeKind::kOnlyA, bytes);
      }
      if (run.end > limit) break;
      ++next_;
    }
    done_ = std::max(done_, limit);
  }

  void add(std::uintptr_t address, RangeKind kind, std::uint64_t bytes) {
    if (!out_.ranges.empty() && out_.ranges.back().kind == kind &&
        out_.ranges.back().end == address) {
      out_.ranges.back().end += page_size_;
      out_.ranges.back().bytes += bytes;
      return;
    }
    out_.ranges.push_back({address, address + page_size_, kind, bytes});
  }

  const std::vector<IndexedRun>& a_;
  PageFile& a_data_;
  PageDiff& out_;
  std::uint32_t page_size_;
  std::size_t next_ = 0;       // first A run that may still hold unaccounted pages
  std::uintptr_t done_ = 0;    // every page below this address is accounted
};

}  // namespace

const char* range_kind_name(RangeKind kind) {
  switch (kind) {
    case RangeKind::kChanged: return "changed";
    case RangeKind::kOnlyA: return "only-a";
    case RangeKind::kOnlyB: return "only-b";
  }
  return "unknown";
}

PageDiff diff_pages(const std::filesystem::path& a, const std::filesystem::path& b,
                    bool force_progress) {
  const std::vector<IndexedRun> a_runs = index_runs(a, force_progress);
  SnapshotReader b_reader(b);
  require_full(b_reader);
  PageDiff out;
  out.page_size = b_reader.header().page_size;
  if (read_snapshot_header(a).page_size != out.page_size || out.page_size % 8 != 0 ||
      out.page_size == 0) {
    throw std::runtime_error("the snapshots have different (or odd) page sizes");
  }
  PageFile a_data(a, out.page_size);
  Merger merger(a_runs, a_data, out);
  Progress progress("diff " + b.filename().string(), b_reader.size(), force_progress);
  std::vector<unsigned char> buffer;
  PageRun run;
  while (b_reader.next(run)) {
    if (run.zero) continue;
    // A run lies in one chunk, 64 MiB in the format; the reader bounds runs only by the chunk
    // size the header declares, so a damaged header must not make this buffer huge.
    if (std::uint64_t{run.pages} * out.page_size > kMaxRunBytes) {
      throw SnapshotError(SnapshotErrc::kCorrupt,
                          b.string() + ": a run longer than a 64 MiB chunk at " +
                              hex(run.address));
    }
    buffer.resize(std::size_t{run.pages} * out.page_size);
    b_reader.read_data(buffer.data());
    for (std::uint32_t i = 0; i < run.pages; ++i) {
      merger.page_b(run.address + std::uintptr_t{i} * out.page_size,
                    buffer.data() + std::size_t{i} * out.page_size);
    }
    progress.update(b_reader.position());
  }
  merger.finish();
  return out;
}

}  // namespace reheap::snap
