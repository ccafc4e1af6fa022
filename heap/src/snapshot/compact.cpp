// compact(): a chain folded into one full snapshot, from the files alone.
//
// The chain is replayed on a page map (page address -> the file and offset holding its latest
// data) rather than on memory, so compaction needs neither the zone nor the heap's size in RAM:
// only 16 bytes per page. Every file is verified on the way (checksums, trailer); the output's
// data is then read back from the files with pread and checked for zero pages again, since a
// page zeroed later in the chain is a hole in the result.
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>

#include "file_io.h"
#include "format.h"
#include "program_scan.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "snapshot_registry.h"
#include "writer.h"

namespace reheap {

using namespace detail::snapshot;


namespace {

struct PageSource {
  std::uint32_t file;
  std::uint64_t offset;
};

class Descriptors {
 public:
  ~Descriptors() {
    for (int fd : fds_) ::close(fd);
  }
  int open(const std::filesystem::path& file) {
    fds_.reserve(fds_.size() + 1);  // so that push_back cannot throw with the descriptor open
    const int fd = open_snapshot_file(file);
    fds_.push_back(fd);
    return fd;
  }
  int operator[](std::size_t i) const { return fds_[i]; }

 private:
  std::vector<int> fds_;
};

void pread_exact(int fd, void* data, std::size_t size, std::uint64_t offset, const std::string& name) {
  auto* p = static_cast<unsigned char*>(data);
  while (size != 0) {
    const ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_errno(errno, name, "pread");
    if (n == 0) fail(SnapshotErrc::kTruncated, name, "the file shrank while being compacted");
    p += n;
    size -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
}

bool all_zero(const unsigned char* page) {
  for (std::size_t i = 0; i < kPageSize; ++i) {
    if (page[i] != 0) return false;
  }
  return true;
}

}  // namespace

// The pointers into the program that a chain's files list: the compacted file lists those its
// pages still hold, with their new counts. Every file of a chain is saved under one layout (a
// relocating restore makes the next save full), so the lists agree on every value.
struct ListedRefs {
  bool complete = true;  // every file had a list (older writers did not)
  std::map<std::uint64_t, ProgramRef> by_value;

  void merge(const SnapshotHeader& h) {
    complete = complete && h.has_program_refs;
    for (const ProgramRef& r : h.program_refs) by_value.emplace(r.value, r);
  }

  std::vector<ProgramRef> occurring(const std::unordered_map<std::uint64_t, std::uint64_t>& counts,
                                    const std::string& name) const {
    std::vector<ProgramRef> out;
    if (!complete) return out;
    for (const auto& [value, words] : counts) {
      auto it = by_value.find(value);
      if (it == by_value.end()) {
        fail(SnapshotErrc::kCorrupt, name, "a page of the chain points into the saving program at a value no file lists");
      }
      out.push_back(it->second);
      out.back().words = words;
    }
    std::sort(out.begin(), out.end(), [](const ProgramRef& a, const ProgramRef& b) { return a.value < b.value; });
    return out;
  }
};

SnapshotInfo compact(const std::filesystem::path& latest, const std::filesystem::path& out) {
  HeapScope system(nullptr);
  const std::filesystem::path target = save_target(out, "compact");
  const std::vector<std::filesystem::path> chain = snapshot_chain(latest);
  // `out` may replace `latest` itself (its state, in one file), never a file `latest` depends on:
  // that file's own state would be lost and `latest`'s chain broken, as save_increment refuses too.
  std::error_code same_error;
  for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
    if (std::filesystem::equivalent(out, chain[i], same_error)) {
      throw SnapshotError(SnapshotErrc::kMisuse,
                          out.string() + ": is a file of the chain being compacted (" + chain[i].string() +
                              ", an ancestor of " + latest.string() +
                              "): the output would replace a snapshot the chain depends on; write it "
                              "under another name");
    }
  }
  std::map<std::uintptr_t, PageSource> pages;
  SnapshotHeader final;
  Descriptors fds;
  ListedRefs listed;
  for (std::uint32_t i = 0; i < chain.size(); ++i) {
    SnapshotReader reader(chain[i]);
    const SnapshotHeader& h = reader.header();
    for (const SnapshotChunk& c : h.chunks) {
      if (!c.fresh) continue;
      const std::uintptr_t begin = h.zone_base + std::uintptr_t{c.index} * h.chunk_size;
      pages.erase(pages.lower_bound(begin), pages.lower_bound(begin + h.chunk_size));
    }
    PageRun run;
    while (reader.next(run)) {
      const std::uintptr_t end = run.address + std::uintptr_t{run.pages} * h.page_size;
      pages.erase(pages.lower_bound(run.address), pages.lower_bound(end));
      if (run.zero) continue;
      reader.skip_data();  // verifies the run before the map points at it
      for (std::uint32_t p = 0; p < run.pages; ++p) {
        pages.emplace_hint(pages.end(), run.address + std::uintptr_t{p} * h.page_size,
                           PageSource{i, run.offset + std::uint64_t{p} * h.page_size});
      }
    }
    final = h;
    fds.open(chain[i]);
    listed.merge(h);
  }
  if (final.page_size != kPageSize) {
    fail(SnapshotErrc::kZoneMismatch, latest.string(), "compact needs 4 KiB pages");
  }
  // Pages of chunks the heap no longer owns are dropped.
  for (auto it = pages.begin(); it != pages.end();) {
    const auto index = static_cast<std::uint32_t>((it->first - final.zone_base) / final.chunk_size);
    const bool owned = std::any_of(final.chunks.begin(), final.chunks.end(),
                                   [&](const SnapshotChunk& c) { return c.index == index; });
    it = owned ? std::next(it) : pages.erase(it);
  }

  // Plan: contiguous non-zero pages within a chunk form a run.
  std::vector<PlannedRun> runs;
  ProgramScan scan(final.layout);
  std::unique_ptr<unsigned char[]> page(new unsigned char[kPageSize]);
  for (auto it = pages.begin(); it != pages.end();) {
    pread_exact(fds[it->second.file], page.get(), kPageSize, it->second.offset, chain[it->second.file].string());
    if (all_zero(page.get())) {
      it = pages.erase(it);
      continue;
    }
    scan.scan(reinterpret_cast<std::uintptr_t>(page.get()), kPageSize);
    const std::uintptr_t a = it->first;
    if (!runs.empty() && runs.back().address + std::uintptr_t{runs.back().pages} * kPageSize == a &&
        (a - final.zone_base) % final.chunk_size != 0) {
      ++runs.back().pages;
    } else {
      runs.push_back({a, 1, false});
    }
    ++it;
  }

  SnapshotHeader header = final;
  header.has_program_refs = listed.complete;
  header.program_refs = listed.occurring(scan.counts(), latest.string());
  header.kind = SnapshotKind::kFull;
  header.parent_id = 0;
  header.parent_file.clear();
  // The id stays the last file's: the output holds that very state, so an increment built on it
  // (a later file of the same chain) applies on the output too, whether it replaced the last file
  // in place or stands next to it.
  header.created_unix_ns = unix_time_ns();
  for (SnapshotChunk& c : header.chunks) c.fresh = false;
  header.tracking = "compacted from " + std::to_string(chain.size()) + " files";
  // Recount the pages by kind from the final chunk uses.
  header.pages = PageCounts{};
  std::uint64_t data_pages = 0;
  for (const auto& [address, source] : pages) {
    const auto index = static_cast<std::uint32_t>((address - final.zone_base) / final.chunk_size);
    auto c = std::find_if(final.chunks.begin(), final.chunks.end(),
                          [&](const SnapshotChunk& k) { return k.index == index; });
    // The header lists chunks, not runs: a huge run is taken to start at the first of its
    // consecutive huge chunks.
    const ChunkUse use = c->use;
    if (use == ChunkUse::kHuge) {
      while (c != final.chunks.begin() && std::prev(c)->use == ChunkUse::kHuge &&
             std::prev(c)->index + 1 == c->index) {
        --c;
      }
    }
    const std::uintptr_t run_base = final.zone_base + std::uintptr_t{c->index} * final.chunk_size;
    count_page(header.pages, use, run_base, address);
    ++data_pages;
  }

  AtomicFile file(target);
  SnapshotWriter writer(file.sink(), header);
  auto it = pages.begin();
  for (const PlannedRun& r : runs) {
    writer.begin_run(r.address, r.pages);
    for (std::uint32_t p = 0; p < r.pages; ++p, ++it) {
      pread_exact(fds[it->second.file], page.get(), kPageSize, it->second.offset, chain[it->second.file].string());
      writer.append(page.get(), kPageSize);
    }
    writer.end_run();
  }
  writer.finish();
  SnapshotInfo info;
  // The folded file needs the chain's last chunks: listed like any snapshot this node saves.
  Publication publication(target, runs_of(header.chunks));
  info.bytes_written = file.commit(&publication);
  info.kind = SnapshotKind::kFull;
  info.id = header.id;
  info.generation = header.generation;
  info.pages_written = data_pages;
  info.tracking = header.tracking;
  return info;
}

}  // namespace reheap
