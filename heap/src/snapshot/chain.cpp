// Whole-file checks and parent chains, built on SnapshotReader.
#include <set>

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

std::vector<std::filesystem::path> snapshot_chain(const std::filesystem::path& latest) {
  HeapScope system(nullptr);
  std::vector<std::filesystem::path> chain{latest};
  SnapshotHeader child = read_snapshot_header(latest);
  std::set<std::uint64_t> seen{child.id};
  while (child.kind == SnapshotKind::kIncremental) {
    const std::filesystem::path& child_file = chain.back();
    const std::filesystem::path parent_file =
        (child_file.has_parent_path() ? child_file.parent_path() : std::filesystem::path(".")) / child.parent_file;
    std::error_code ec;
    if (!std::filesystem::exists(parent_file, ec)) {
      fail(SnapshotErrc::kBrokenChain, child_file.string(),
           "its parent snapshot " + parent_file.string() + " is missing");
    }
    SnapshotHeader parent;
    try {
      parent = read_snapshot_header(parent_file);
    } catch (const SnapshotError& e) {
      throw SnapshotError(SnapshotErrc::kBrokenChain, child_file.string() + ": its parent is unreadable: " + e.what());
    }
    const char* mismatch = nullptr;
    if (parent.id != child.parent_id) {
      mismatch = "is a different snapshot than the one it was built on (ids differ: replaced or overwritten?)";
    } else if (parent.heap_id != child.heap_id || parent.zone_base != child.zone_base ||
               parent.zone_size != child.zone_size || parent.page_size != child.page_size ||
               parent.chunk_size != child.chunk_size) {
      mismatch = "belongs to another heap or zone";
    } else if (parent.generation + 1 != child.generation) {
      mismatch = "has the wrong generation";
    } else if (parent.checked_build != child.checked_build) {
      // A Snapshotter never writes such a chain (its first save after a converted restore is
      // full), and restore converts a heap once, from the files of one build (checked_conversion.h).
      mismatch = child.checked_build
                     ? "was saved by a build without REHEAP_CHECKS, it by one with (a chain is one build's)"
                     : "was saved by a build with REHEAP_CHECKS, it by one without (a chain is one build's)";
    }
    if (mismatch != nullptr) {
      fail(SnapshotErrc::kBrokenChain, child_file.string(), "its parent " + parent_file.string() + " " + mismatch);
    }
    if (!seen.insert(parent.id).second) {
      fail(SnapshotErrc::kBrokenChain, child_file.string(), "the chain of parents loops");
    }
    chain.push_back(parent_file);
    child = std::move(parent);
  }
  return std::vector<std::filesystem::path>(chain.rbegin(), chain.rend());
}

}  // namespace reheap
