// The page comparison behind `reheap-snap diff`: two full snapshots, page by page.
//
// A full snapshot stores each non-zero page of the heap once; a page it does not store is zero.
// So comparing two heap states is a merge of two ascending lists of pages. Memory stays small
// whatever the files' sizes: A is read once for its run index (address, page count, file offset;
// the reader checks every checksum on the way), then B is streamed run by run, and A's page data
// is read back by offset with pread() through a small read-ahead window.
//
// Within each differing page the comparison also records where the bytes differ, as spans:
// maximal stretches of differing bytes, where two differences fewer than kSpanGap equal bytes
// apart are one span (a pointer that changed in its low and high bytes is one change, not two).
// A page "only in A" differs from B's zero page in its non-zero bytes, and likewise for B. Spans
// never cross a page. So that memory stays bounded on a heap that changed everywhere, only the
// first kMaxSpans spans are kept; every range still knows its first and last differing byte and
// how many spans it has.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "stored_pages.h"

namespace reheap::snap {

inline constexpr std::size_t kSpanGap = 8;
inline constexpr std::size_t kMaxSpans = 100'000;

enum class RangeKind : std::uint8_t {
  kChanged,  // stored in both, contents differ
  kOnlyA,    // stored in A only: zero in B
  kOnlyB,    // stored in B only: zero in A
};

// Adjacent pages of the same kind, [begin, end).
struct DiffRange {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
  RangeKind kind = RangeKind::kChanged;
  std::uint64_t bytes = 0;  // kChanged: bytes that differ; otherwise non-zero bytes of the page
  std::uintptr_t first = 0;  // address of the first differing byte
  std::uintptr_t last = 0;   // address of the last differing byte (inclusive)
  std::uint64_t spans = 0;   // spans in the range, kept or not
};

// Differing bytes [begin, end) within one page, `bytes` of them.
struct ByteSpan {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
  std::uint64_t bytes = 0;
  std::size_t range = 0;  // index in PageDiff::ranges
};

struct PageDiff {
  std::uint32_t page_size = 0;
  std::uint64_t pages_a = 0;  // pages stored in A
  std::uint64_t pages_b = 0;
  std::uint64_t only_a = 0;
  std::uint64_t only_b = 0;
  std::uint64_t changed = 0;
  std::uint64_t same = 0;     // stored in both, identical
  std::uint64_t changed_bytes = 0;  // bytes that differ within changed pages
  std::uint64_t only_bytes = 0;     // non-zero bytes in only-A and only-B pages
  std::vector<DiffRange> ranges;    // ascending, adjacent ranges of one kind merged
  std::vector<ByteSpan> spans;      // ascending; the first kMaxSpans of them
  std::uint64_t spans_total = 0;
  std::vector<IndexedRun> index_a;  // the data runs of each file, for reading pages back
  std::vector<IndexedRun> index_b;

  bool identical() const { return only_a == 0 && only_b == 0 && changed == 0; }
};

// Compares the pages of two full snapshots (throws SnapshotError on a bad file, and
// std::runtime_error when they are not comparable: an increment, different page sizes).
PageDiff diff_pages(const std::filesystem::path& a, const std::filesystem::path& b,
                    bool force_progress);

const char* range_kind_name(RangeKind kind);

}  // namespace reheap::snap
