// `reheap-snap diff A B`: which pages, which bytes, and which blocks differ between the heap
// states two snapshots describe.
//
// An increment does not describe a state on its own (pages it does not hold are its parents'),
// so an increment is first folded with reheap::compact() into a temporary full snapshot in
// $TMPDIR (default /tmp), removed afterwards. That reuses the library's own chain logic instead
// of a second implementation of it here, at the cost of temporary disk space and one more write
// of the chain; the user can do the same ahead of time with `reheap-snap compact`.
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "command.h"
#include "block_map.h"
#include "json_writer.h"
#include "page_diff.h"
#include "reheap/snapshot.h"
#include "span_blocks.h"
#include "stored_pages.h"

namespace reheap::snap {
namespace {

// A full snapshot standing for `file`: the file itself, or its compacted chain (deleted later).
class FullSnapshot {
 public:
  explicit FullSnapshot(const std::filesystem::path& file) : file_(file), path_(file) {
    header_ = read_snapshot_header(file);
    if (header_.kind == SnapshotKind::kFull) return;
    const char* dir = std::getenv("TMPDIR");
    std::string name = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") +
                       "/reheap-snap-diff-XXXXXX";
    const int fd = ::mkstemp(name.data());
    if (fd < 0) throw std::runtime_error("cannot create a temporary file in " + name);
    ::close(fd);
    temporary_ = path_ = name;
    std::fprintf(stderr, "reheap-snap: %s is an increment; compacting its chain to %s\n",
                 file.c_str(), name.c_str());
    try {
      reheap::compact(file, path_);
    } catch (...) {
      // The destructor will not run for a constructor that throws: a broken chain must not leave
      // an empty temporary behind on every call.
      std::error_code ignored;
      std::filesystem::remove(temporary_, ignored);
      throw;
    }
  }
  ~FullSnapshot() {
    if (!temporary_.empty()) {
      std::error_code ignored;
      std::filesystem::remove(temporary_, ignored);
    }
  }
  FullSnapshot(const FullSnapshot&) = delete;
  FullSnapshot& operator=(const FullSnapshot&) = delete;

  const std::filesystem::path& file() const { return file_; }   // as named by the user
  const std::filesystem::path& path() const { return path_; }   // the full snapshot to read
  const SnapshotHeader& header() const { return header_; }      // of file()
  bool compacted() const { return !temporary_.empty(); }

 private:
  std::filesystem::path file_;
  std::filesystem::path path_;
  std::filesystem::path temporary_;
  SnapshotHeader header_;
};

struct HeaderChange {
  std::string field;
  std::string a;
  std::string b;
};

std::string chunk_list(const SnapshotHeader& h) {
  std::string text;
  for (const SnapshotChunk& chunk : h.chunks) {
    if (!text.empty()) text += ',';
    text += std::to_string(chunk.index) + ':' + use_name(chunk.use);
  }
  return text;
}

// Differences in what the headers say about the heap (not about the files: ids, generations and
// times always differ). The chunk list matters on its own: a chunk may be owned and all zero.
std::vector<HeaderChange> header_changes(const SnapshotHeader& a, const SnapshotHeader& b) {
  std::vector<HeaderChange> changes;
  const auto compare = [&](const char* field, const std::string& x, const std::string& y) {
    if (x != y) changes.push_back({field, x, y});
  };
  compare("heap_id", std::to_string(a.heap_id), std::to_string(b.heap_id));
  compare("root", hex(a.root), hex(b.root));
  compare("limit", std::to_string(a.limit_bytes), std::to_string(b.limit_bytes));
  compare("committed", std::to_string(a.committed_bytes), std::to_string(b.committed_bytes));
  compare("chunks", chunk_list(a), chunk_list(b));
  return changes;
}

// Spans listed under each range in text (--json lists every span kept).
constexpr std::size_t kTextSpansPerRange = 8;

// The spans of each range, as indexes into the attributed list.
std::vector<std::vector<std::size_t>> spans_by_range(const PageDiff& d,
                                                     const std::vector<AttributedSpan>& spans) {
  std::vector<std::vector<std::size_t>> by_range(d.ranges.size());
  for (std::size_t i = 0; i < spans.size(); ++i) by_range[spans[i].range].push_back(i);
  return by_range;
}

// "class 3 (48 B) block 0x... +16", "page run 0x... (3 pages, live) +8192", ...
std::string block_text(const AttributedSpan& s) {
  const BlockInfo& b = s.block;
  const std::string at = " +" + std::to_string(b.offset(s.begin));
  switch (b.kind) {
    case BlockKind::kClassBlock:
      return "class " + std::to_string(b.size_class) + " (" + std::to_string(b.size) +
             " B) block " + hex(b.address) + at;
    case BlockKind::kPageRun:
      return "page run " + hex(b.address) + " (" + std::to_string(b.size / kPageSize) +
             " pages, " + (b.free ? "free" : "live") + ")" + at;
    case BlockKind::kHugeBlock:
      return "huge block " + hex(b.address) + " (" + human_bytes(b.size) + ")" + at;
    case BlockKind::kMetadata:
      return "metadata: " + b.what + " " + hex(b.address) + at;
    case BlockKind::kUnattributed:
      break;
  }
  return "unattributed (" + b.what + ")";
}

void span_json(JsonWriter& json, const AttributedSpan& s, std::uint32_t page_size) {
  json.begin_object();
  json.field("begin", hex(s.begin));
  json.field("end", hex(s.end));
  json.field("page_offset", std::uint64_t{s.begin % page_size});
  json.field("bytes", s.bytes);
  json.key("block");
  json.begin_object();
  const BlockInfo& b = s.block;
  json.field("kind", block_kind_name(b.kind));
  if (b.attributed()) {
    json.field("address", hex(b.address));
    json.field("size", b.size);
    json.field("offset", b.offset(s.begin));
  }
  if (b.kind == BlockKind::kClassBlock) json.field("class", b.size_class);
  if (b.kind == BlockKind::kPageRun) json.field("free", b.free);
  if (b.kind == BlockKind::kMetadata) json.field("what", b.what);
  if (b.kind == BlockKind::kUnattributed) json.field("why", b.what);
  json.end_object();
  json.end_object();
}

void describe_side(JsonWriter& json, const char* name, const FullSnapshot& s) {
  json.key(name);
  json.begin_object();
  json.field("file", s.file().string());
  json.field("kind", kind_name(s.header().kind));
  json.field("generation", std::uint64_t{s.header().generation});
  json.field("id", hex(s.header().id));
  json.field("compacted", s.compacted());
  json.end_object();
}

void print_json(const FullSnapshot& a, const FullSnapshot& b, const PageDiff& d,
                const std::vector<AttributedSpan>& spans, const std::vector<HeaderChange>& changes,
                bool identical) {
  const std::vector<std::vector<std::size_t>> by_range = spans_by_range(d, spans);
  JsonWriter json(std::cout);
  json.begin_object();
  describe_side(json, "a", a);
  describe_side(json, "b", b);
  json.field("identical", identical);
  json.key("header_changes");
  json.begin_array();
  for (const HeaderChange& change : changes) {
    json.begin_object();
    json.field("field", change.field);
    json.field("a", change.a);
    json.field("b", change.b);
    json.end_object();
  }
  json.end_array();
  json.key("pages");
  json.begin_object();
  json.field("page_size", d.page_size);
  json.field("in_a", d.pages_a);
  json.field("in_b", d.pages_b);
  json.field("only_a", d.only_a);
  json.field("only_b", d.only_b);
  json.field("changed", d.changed);
  json.field("same", d.same);
  json.field("changed_bytes", d.changed_bytes);
  json.field("only_bytes", d.only_bytes);
  json.end_object();
  json.key("spans");
  json.begin_object();
  json.field("total", d.spans_total);
  json.field("kept", std::uint64_t{d.spans.size()});
  json.field("complete", d.spans.size() == d.spans_total);
  json.end_object();
  json.key("ranges");
  json.begin_array();
  for (std::size_t i = 0; i < d.ranges.size(); ++i) {
    const DiffRange& r = d.ranges[i];
    json.begin_object();
    json.field("kind", range_kind_name(r.kind));
    json.field("begin", hex(r.begin));
    json.field("end", hex(r.end));
    json.field("pages", std::uint64_t{(r.end - r.begin) / d.page_size});
    json.field("bytes", r.bytes);
    if (r.spans != 0) {
      json.field("first", hex(r.first));
      json.field("last", hex(r.last));
    }
    json.field("span_count", r.spans);
    json.key("spans");
    json.begin_array();
    for (std::size_t s : by_range[i]) span_json(json, spans[s], d.page_size);
    json.end_array();
    json.end_object();
  }
  json.end_array();
  json.end_object();
  json.finish();
}

void print_text(const FullSnapshot& a, const FullSnapshot& b, const PageDiff& d,
                const std::vector<AttributedSpan>& spans, const std::vector<HeaderChange>& changes,
                bool identical, std::size_t max_lines) {
  const std::vector<std::vector<std::size_t>> by_range = spans_by_range(d, spans);
  const auto side = [](const char* name, const FullSnapshot& s) {
    std::printf("%s  %s (%s, generation %llu%s)\n", name, s.file().c_str(),
                kind_name(s.header().kind), static_cast<unsigned long long>(s.header().generation),
                s.compacted() ? ", chain compacted" : "");
  };
  side("A", a);
  side("B", b);
  for (const HeaderChange& change : changes) {
    std::printf("header %s: %s -> %s\n", change.field.c_str(), change.a.c_str(),
                change.b.c_str());
  }
  std::printf("pages  A %llu, B %llu stored; %llu only in A, %llu only in B, %llu changed "
              "(%llu bytes differ), %llu same\n",
              static_cast<unsigned long long>(d.pages_a),
              static_cast<unsigned long long>(d.pages_b),
              static_cast<unsigned long long>(d.only_a), static_cast<unsigned long long>(d.only_b),
              static_cast<unsigned long long>(d.changed),
              static_cast<unsigned long long>(d.changed_bytes),
              static_cast<unsigned long long>(d.same));
  if (!d.ranges.empty()) std::printf("ranges %zu\n", d.ranges.size());
  std::size_t shown = 0;
  for (std::size_t i = 0; i < d.ranges.size(); ++i) {
    const DiffRange& r = d.ranges[i];
    if (max_lines != 0 && shown == max_lines) {
      std::printf("  ... %zu more (--max-lines 0 or --json lists all)\n",
                  d.ranges.size() - shown);
      break;
    }
    ++shown;
    std::printf("  %-7s %s-%s %6llu pages %9llu bytes", range_kind_name(r.kind),
                hex(r.begin).c_str(), hex(r.end).c_str(),
                static_cast<unsigned long long>((r.end - r.begin) / d.page_size),
                static_cast<unsigned long long>(r.bytes));
    if (r.spans != 0) {
      std::printf(", differing bytes %s..%s", hex(r.first).c_str(), hex(r.last).c_str());
    }
    std::printf("\n");
    // Each span: its addresses, its offset in its page, and the block it lies in.
    std::size_t listed = 0;
    for (std::size_t s : by_range[i]) {
      if (listed++ == kTextSpansPerRange) break;
      const AttributedSpan& span = spans[s];
      std::printf("    %s-%s page+%-4llu %6llu B  %s\n", hex(span.begin).c_str(),
                  hex(span.end).c_str(),
                  static_cast<unsigned long long>(span.begin % d.page_size),
                  static_cast<unsigned long long>(span.bytes), block_text(span).c_str());
    }
    if (r.spans > kTextSpansPerRange) {
      std::printf("    ... %llu spans in all (--json lists them)\n",
                  static_cast<unsigned long long>(r.spans));
    }
  }
  std::printf("%s\n", identical ? "identical" : "different");
}

}  // namespace

int run_diff(const Options& options) {
  const FullSnapshot a(options.files[0]);
  const FullSnapshot b(options.files[1]);
  PageDiff d = diff_pages(a.path(), b.path(), options.progress);
  const std::vector<HeaderChange> changes = header_changes(a.header(), b.header());
  const bool identical = d.identical() && changes.empty();
  // Attribution reads each side's metadata from the full snapshot that stands for it (a
  // compacted chain's header is the latest file's, with the same chunks and heap).
  const StoredPages pages_a(a.path(), std::move(d.index_a));
  const StoredPages pages_b(b.path(), std::move(d.index_b));
  const SnapshotHeader header_a = read_snapshot_header(a.path());
  const SnapshotHeader header_b = read_snapshot_header(b.path());
  BlockMap map_a(header_a, pages_a);
  BlockMap map_b(header_b, pages_b);
  const std::vector<AttributedSpan> spans = attribute_spans(d, pages_a, pages_b, map_a, map_b);
  if (options.json) {
    print_json(a, b, d, spans, changes, identical);
  } else {
    print_text(a, b, d, spans, changes, identical, options.max_lines);
  }
  return identical ? kOk : kNegative;
}

}  // namespace reheap::snap
