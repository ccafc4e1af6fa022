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

// Compares one page of A with one of B (null: a zero page), calls `span(begin, end, bytes)` with
// the page offsets of each span of differing bytes, and returns how many bytes differ. Words are
// compared eight bytes at a time, so identical stretches cost what a memcmp would.
template <class OnSpan>
std::uint64_t compare_page(const unsigned char* a, const unsigned char* b, std::size_t size,
                           OnSpan&& span) {
  std::uint64_t count = 0;
  std::size_t begin = 0;
  std::size_t end = 0;  // one past the last differing byte of the open span (0: none open)
  std::uint64_t in_span = 0;
  for (std::size_t i = 0; i < size; i += 8) {
    std::uint64_t x = 0;
    std::uint64_t y = 0;
    if (a != nullptr) std::memcpy(&x, a + i, 8);
    if (b != nullptr) std::memcpy(&y, b + i, 8);
    std::uint64_t d = x ^ y;
    if (d == 0) continue;
    // Little-endian: byte k of the word is bits 8k..8k+7.
    for (std::size_t k = 0; d != 0; ++k, d >>= 8) {
      if ((d & 0xFF) == 0) continue;
      const std::size_t at = i + k;
      ++count;
      if (end != 0 && at - end < kSpanGap) {
        end = at + 1;
        ++in_span;
        continue;
      }
      if (end != 0) span(begin, end, in_span);
      begin = at;
      end = at + 1;
      in_span = 1;
    }
  }
  if (end != 0) span(begin, end, in_span);
  return count;
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
      const std::uint64_t bytes = compare(address, a, data, RangeKind::kChanged);
      if (bytes == 0) {
        ++out_.same;
      } else {
        ++out_.changed;
        out_.changed_bytes += bytes;
      }
    } else {
      ++out_.only_b;
      out_.only_bytes += compare(address, nullptr, data, RangeKind::kOnlyB);
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
        const unsigned char* a = a_data_.page(offset_in_a(p), data_end_of_a());
        ++out_.pages_a;
        ++out_.only_a;
        out_.only_bytes += compare(p, a, nullptr, RangeKind::kOnlyA);
      }
      if (run.end > limit) break;
      ++next_;
    }
    done_ = std::max(done_, limit);
  }

  // Compares the page at `address` of A and B (null: a zero page), records its spans, and adds
  // it to the ranges when it differs or is stored on one side only. Returns the differing bytes.
  std::uint64_t compare(std::uintptr_t address, const unsigned char* a, const unsigned char* b,
                        RangeKind kind) {
    // Spans are recorded first, with the index the page's range will have.
    const bool extends = !out_.ranges.empty() && out_.ranges.back().kind == kind &&
                         out_.ranges.back().end == address;
    const std::size_t range = extends ? out_.ranges.size() - 1 : out_.ranges.size();
    std::uintptr_t first = 0;
    std::uintptr_t last = 0;
    std::uint64_t spans = 0;
    const std::uint64_t bytes =
        compare_page(a, b, page_size_, [&](std::size_t begin, std::size_t end, std::uint64_t n) {
          if (spans++ == 0) first = address + begin;
          last = address + end - 1;
          if (out_.spans.size() < kMaxSpans) {
            out_.spans.push_back({address + begin, address + end, n, range});
          }
          ++out_.spans_total;
        });
    if (bytes == 0 && kind == RangeKind::kChanged) return 0;
    if (extends) {
      DiffRange& r = out_.ranges.back();
      r.end += page_size_;
      r.bytes += bytes;
      if (spans != 0) {
        if (r.spans == 0) r.first = first;
        r.last = last;
        r.spans += spans;
      }
    } else {
      out_.ranges.push_back({address, address + page_size_, kind, bytes, first, last, spans});
    }
    return bytes;
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
  PageDiff out;
  out.index_a = index_runs(a, force_progress);
  const std::vector<IndexedRun>& a_runs = out.index_a;
  SnapshotReader b_reader(b);
  require_full(b_reader);
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
    out.index_b.push_back({run.address, run.address + std::uintptr_t{run.pages} * out.page_size,
                           run.offset});
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
