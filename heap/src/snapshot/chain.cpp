// Whole-file checks, parent chains and reads of a few bytes, built on SnapshotReader.
#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <vector>

#include "format.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot_file.h"

namespace reheap {

using detail::snapshot::fail;

SnapshotHeader read_snapshot_header(const std::filesystem::path& file) {
  HeapScope system(nullptr);
  return SnapshotReader(file).header();
}

SnapshotHeader verify_snapshot(const std::filesystem::path& file) {
  HeapScope system(nullptr);
  SnapshotReader reader(file);
  PageRun run;
  while (reader.next(run)) {
    if (!run.zero) reader.skip_data();
  }
  return reader.header();
}

namespace {

// The parent's path as reached from its child's: the child's directory joined with the name the
// child records, relative to it. A child named without a directory names its parent without one
// ("s", not "./s", a second name for the same file). A Snapshotter records a parent in another
// directory as "../d/s"; each ".." that climbs back out of the child's directory is left out
// where the shorter path is the same file: after a symbolic link, ".." leads elsewhere.
std::filesystem::path parent_of(const std::filesystem::path& child_file, const std::filesystem::path& recorded) {
  const std::filesystem::path joined = child_file.parent_path() / recorded;
  std::filesystem::path directory = child_file.parent_path();
  auto rest = recorded.begin();
  while (rest != recorded.end() && *rest == ".." && directory.has_relative_path() &&
         !directory.filename().empty() && directory.filename() != "." && directory.filename() != "..") {
    directory = directory.parent_path();
    ++rest;
  }
  if (rest == recorded.begin()) return joined;
  std::filesystem::path shorter = directory;
  for (; rest != recorded.end(); ++rest) shorter /= *rest;
  std::error_code ec;
  return std::filesystem::equivalent(shorter, joined, ec) ? shorter : joined;
}

// The parent the increment `child` (read from `child_file`) was built on, its link checked: it
// exists, reads, and is the snapshot the child names (id, heap, zone, generation, build).
// `*parent` gets its header. Throws kBrokenChain naming the child otherwise.
std::filesystem::path linked_parent(const std::filesystem::path& child_file, const SnapshotHeader& child,
                                    SnapshotHeader* parent) {
  const std::filesystem::path parent_file = parent_of(child_file, child.parent_file);
  std::error_code ec;
  if (!std::filesystem::exists(parent_file, ec)) {
    fail(SnapshotErrc::kBrokenChain, child_file.string(),
         "its parent snapshot " + parent_file.string() + " is missing");
  }
  try {
    *parent = read_snapshot_header(parent_file);
  } catch (const SnapshotError& e) {
    throw SnapshotError(SnapshotErrc::kBrokenChain, child_file.string() + ": its parent is unreadable: " + e.what());
  }
  const char* mismatch = nullptr;
  if (parent->id != child.parent_id) {
    mismatch = "is a different snapshot than the one it was built on (ids differ: replaced or overwritten?)";
  } else if (parent->heap_id != child.heap_id || parent->zone_base != child.zone_base ||
             parent->zone_size != child.zone_size || parent->page_size != child.page_size ||
             parent->chunk_size != child.chunk_size) {
    mismatch = "belongs to another heap or zone";
  } else if (parent->generation + 1 != child.generation) {
    mismatch = "has the wrong generation";
  } else if (parent->checked_build != child.checked_build) {
    // A Snapshotter never writes such a chain (its first save after a converted restore is
    // full), and restore converts a heap once, from the files of one build (checked_conversion.h).
    mismatch = child.checked_build
                   ? "was saved by a build without REHEAP_CHECKS, it by one with (a chain is one build's)"
                   : "was saved by a build with REHEAP_CHECKS, it by one without (a chain is one build's)";
  }
  if (mismatch != nullptr) {
    fail(SnapshotErrc::kBrokenChain, child_file.string(), "its parent " + parent_file.string() + " " + mismatch);
  }
  return parent_file;
}

}  // namespace

std::optional<std::filesystem::path> snapshot_parent(const std::filesystem::path& child_file) {
  HeapScope system(nullptr);
  const SnapshotHeader child = read_snapshot_header(child_file);
  if (child.kind != SnapshotKind::kIncremental) return std::nullopt;
  SnapshotHeader parent;
  return linked_parent(child_file, child, &parent);
}

std::vector<std::filesystem::path> snapshot_chain(const std::filesystem::path& latest) {
  HeapScope system(nullptr);
  std::vector<std::filesystem::path> chain{latest};
  SnapshotHeader child = read_snapshot_header(latest);
  std::set<std::uint64_t> seen{child.id};
  while (child.kind == SnapshotKind::kIncremental) {
    SnapshotHeader parent;
    std::filesystem::path parent_file = linked_parent(chain.back(), child, &parent);
    if (!seen.insert(parent.id).second) {
      fail(SnapshotErrc::kBrokenChain, chain.back().string(), "the chain of parents loops");
    }
    chain.push_back(std::move(parent_file));
    child = std::move(parent);
  }
  return std::vector<std::filesystem::path>(chain.rbegin(), chain.rend());
}

namespace {

// [address, address + size) ∩ [from, to), as offsets into the range; empty when first >= last.
struct Overlap {
  std::uintptr_t first = 0;
  std::uintptr_t last = 0;
};
Overlap overlap(std::uintptr_t address, std::size_t size, std::uintptr_t from, std::uintptr_t to) {
  const std::uintptr_t first = std::max(address, from);
  const std::uintptr_t last = std::min(address + size, to);
  return first < last ? Overlap{first - address, last - address} : Overlap{};
}

}  // namespace

void read_snapshot_bytes(const std::filesystem::path& file, std::uintptr_t address, void* out, std::size_t size) {
  HeapScope system(nullptr);
  auto* bytes = static_cast<unsigned char*>(out);
  std::memset(bytes, 0, size);
  if (size == 0) return;
  if (address + size < address) fail(SnapshotErrc::kMisuse, file.string(), "read_snapshot_bytes: the range wraps around");
  // Oldest first, as restore applies them: each file's runs replace what its parents said.
  SnapshotHeader newest;
  std::vector<unsigned char> run_data;
  for (const std::filesystem::path& link : snapshot_chain(file)) {
    SnapshotReader reader(link);
    const SnapshotHeader& h = reader.header();
    for (const SnapshotChunk& c : h.chunks) {
      // A chunk taken again since the parent: its older pages are stale (restore clears it).
      if (!c.fresh) continue;
      const std::uintptr_t from = h.zone_base + std::uintptr_t{c.index} * h.chunk_size;
      const Overlap o = overlap(address, size, from, from + h.chunk_size);
      if (o.first < o.last) std::memset(bytes + o.first, 0, o.last - o.first);
    }
    PageRun run;
    while (reader.next(run)) {
      const Overlap o = overlap(address, size, run.address, run.address + std::uintptr_t{run.pages} * h.page_size);
      if (o.first >= o.last) {
        if (!run.zero) reader.skip_data_unchecked();
        continue;
      }
      if (run.zero) {
        std::memset(bytes + o.first, 0, o.last - o.first);
        continue;
      }
      // The whole run, so that its checksum is checked: at most a chunk.
      run_data.resize(std::size_t{run.pages} * h.page_size);
      reader.read_data(run_data.data());
      std::memcpy(bytes + o.first, run_data.data() + (address + o.first - run.address), o.last - o.first);
    }
    newest = reader.header();
  }
  // What lies outside the heap's chunks is not the heap's: zero the gaps between the overlaps of
  // its chunks (listed by rising index, so the overlaps come in address order).
  std::uintptr_t kept_to = 0;
  for (const SnapshotChunk& c : newest.chunks) {
    const std::uintptr_t from = newest.zone_base + std::uintptr_t{c.index} * newest.chunk_size;
    const Overlap o = overlap(address, size, from, from + newest.chunk_size);
    if (o.first >= o.last) continue;
    if (o.first > kept_to) std::memset(bytes + kept_to, 0, o.first - kept_to);
    kept_to = std::max<std::uintptr_t>(kept_to, o.last);
  }
  if (kept_to < size) std::memset(bytes + kept_to, 0, size - kept_to);
}

}  // namespace reheap
