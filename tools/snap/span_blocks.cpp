// Cutting spans at block boundaries and attributing them (see span_blocks.h).
#include "span_blocks.h"

#include <algorithm>

namespace reheap::snap {
namespace {

// Recounts the differing bytes of [begin, end) from both files and narrows it to the first and
// last of them; false if none differ there.
bool recount(const StoredPages& a, const StoredPages& b, AttributedSpan& piece) {
  const std::size_t size = piece.end - piece.begin;
  std::vector<unsigned char> x(size);
  std::vector<unsigned char> y(size);
  a.read(piece.begin, x.data(), size);
  b.read(piece.begin, y.data(), size);
  std::size_t first = size;
  std::size_t last = 0;
  piece.bytes = 0;
  for (std::size_t i = 0; i < size; ++i) {
    if (x[i] == y[i]) continue;
    ++piece.bytes;
    first = std::min(first, i);
    last = i;
  }
  if (piece.bytes == 0) return false;
  const std::uintptr_t begin = piece.begin;
  piece.begin = begin + first;
  piece.end = begin + last + 1;
  return true;
}

}  // namespace

std::vector<AttributedSpan> attribute_spans(const PageDiff& diff, const StoredPages& a,
                                            const StoredPages& b, BlockMap& map_a,
                                            BlockMap& map_b) {
  std::vector<AttributedSpan> out;
  out.reserve(diff.spans.size());
  for (const ByteSpan& span : diff.spans) {
    BlockMap& map = diff.ranges[span.range].kind == RangeKind::kOnlyA ? map_a : map_b;
    for (std::uintptr_t p = span.begin; p < span.end;) {
      AttributedSpan piece;
      piece.range = span.range;
      piece.block = map.locate(p);
      piece.begin = p;
      piece.end = span.end;
      if (piece.block.attributed()) {
        piece.end = std::min<std::uintptr_t>(span.end, piece.block.address + piece.block.size);
      }
      p = piece.end;
      if (piece.begin == span.begin && piece.end == span.end) {
        piece.bytes = span.bytes;  // the whole span lies in one block: nothing to recount
      } else if (!recount(a, b, piece)) {
        continue;
      }
      out.push_back(std::move(piece));
    }
  }
  return out;
}

}  // namespace reheap::snap
