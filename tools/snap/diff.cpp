// `reheap-snap diff A B`: which pages, and how many bytes, differ between the heap states two
// snapshots describe.
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
#include "json_writer.h"
#include "page_diff.h"
#include "reheap/snapshot.h"

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
    reheap::compact(file, path_);
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
                const std::vector<HeaderChange>& changes, bool identical) {
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
  json.key("ranges");
  json.begin_array();
  for (const DiffRange& r : d.ranges) {
    json.begin_object();
    json.field("kind", range_kind_name(r.kind));
    json.field("begin", hex(r.begin));
    json.field("end", hex(r.end));
    json.field("pages", std::uint64_t{(r.end - r.begin) / d.page_size});
    json.field("bytes", r.bytes);
    json.end_object();
  }
  json.end_array();
  json.end_object();
  json.finish();
}

void print_text(const FullSnapshot& a, const FullSnapshot& b, const PageDiff& d,
                const std::vector<HeaderChange>& changes, bool identical, std::size_t max_lines) {
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
  for (const DiffRange& r : d.ranges) {
    if (max_lines != 0 && shown == max_lines) {
      std::printf("  ... %zu more (--max-lines 0 or --json lists all)\n",
                  d.ranges.size() - shown);
      break;
    }
    ++shown;
    std::printf("  %-7s %s-%s %6llu pages %9llu bytes\n", range_kind_name(r.kind),
                hex(r.begin).c_str(), hex(r.end).c_str(),
                static_cast<unsigned long long>((r.end - r.begin) / d.page_size),
                static_cast<unsigned long long>(r.bytes));
  }
  std::printf("%s\n", identical ? "identical" : "different");
}

}  // namespace

int run_diff(const Options& options) {
  const FullSnapshot a(options.files[0]);
  const FullSnapshot b(options.files[1]);
  const PageDiff d = diff_pages(a.path(), b.path(), options.progress);
  const std::vector<HeaderChange> changes = header_changes(a.header(), b.header());
  const bool identical = d.identical() && changes.empty();
  if (options.json) {
    print_json(a, b, d, changes, identical);
  } else {
    print_text(a, b, d, changes, identical, options.max_lines);
  }
  return identical ? kOk : kNegative;
}

}  // namespace reheap::snap
