// Snapshotter: saving a heap's pages, full or incremental, and tracking its writes in between.
//
// Tracking state, per chunk run of the heap: the prefix [base, tracked_end) that the write
// tracker watches (a whole number of 2 MiB page-table spans, so tracking costs one page-table page
// per 2 MiB and nothing for the rest of the 64 MiB chunk). Relative to the parent snapshot, a
// save then writes:
//   - every page the tracker reports written in a tracked prefix (a zero one as a zero run: it
//     may hold data in the parent);
//   - the used pages beyond the tracked prefix (they were zero in the parent: used ranges only
//     grow, and the prefix covered all of them at the parent), and the prefix is extended;
//   - every used page of a run not tracked at all ("fresh": new since the parent, or released
//     and taken again), with the chunk marked fresh so that restore clears it first.
// A save that fails keeps what it collected (pending), so the next save still writes it: the
// tracker forgets a page once it has reported it.
#include <algorithm>
#include <chrono>
#include <map>

#include "../heap_fast.h"
#include "../heap_records.h"
#include "../zone_impl.h"
#include "checked_conversion.h"
#include "file_io.h"
#include "program_scan.h"
#include "reheap/heap_scope.h"
#include "reheap/node_identity.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"
#include "relocation.h"
#include "snapshot_registry.h"
#include "used_pages.h"
#include "writer.h"

namespace reheap {

using namespace detail::snapshot;
using detail::HeapState;
using detail::os::PageRange;
using detail::os::WriteTracker;

namespace {

constexpr std::size_t kTrackSpan = detail::kGroupSize;  // one page-table page maps 2 MiB

}  // namespace

struct Snapshotter::State final : detail::ChunkObserver {
  struct TrackedRun {
    std::uint32_t chunks = 1;
    std::uintptr_t tracked_end = 0;  // [base, tracked_end) is watched
    std::vector<PageRange> ranges;   // as given to the tracker (untrack needs them exactly)
  };

  HeapState* heap = nullptr;
  bool heap_alive = true;
  WriteTracker tracker;
  bool tracking_available = false;
  std::string tracking_why;
  std::map<std::uintptr_t, TrackedRun> tracked;  // by run base

  // The snapshot the next increment applies on.
  bool has_parent = false;
  std::uint64_t parent_id = 0;
  std::uint64_t generation = 0;
  std::filesystem::path parent_path;  // absolute; empty when the parent went to a sink
  // The files of the chain the next increment continues, oldest first, the parent last, each as
  // weakly_canonical made it when it was recorded: an increment must replace none of them, since
  // restoring it reads them all. Empty when the parent went to a sink.
  std::vector<std::filesystem::path> ancestors;

  // What saves that then failed took from the tracker: still to be written by the next one.
  std::vector<Segment> pending;
  std::vector<std::uintptr_t> pending_fresh;  // runs first tracked by a failed save
  std::string broken;  // why tracking lost track (the next save must be full), or ""
  bool collect_failed = false;  // set by gather: some written pages of a tracked run are unknown
  std::vector<HeldRun> written_runs;  // set by write: the chunks of the snapshot it wrote

  ~State() {
    if (heap_alive) detail::zone().set_observer(heap->id, nullptr);
  }

  void untrack_run(std::map<std::uintptr_t, TrackedRun>::iterator it) noexcept {
    for (const PageRange& r : it->second.ranges) tracker.untrack(r);
    tracked.erase(it);
  }

  void chunks_released(std::uintptr_t first, std::size_t) noexcept override {
    auto it = tracked.find(first);
    if (it != tracked.end()) untrack_run(it);
    // What a failed save left pending in the run goes with it: the next save must not read
    // pages the heap gave back (inaccessible in quarantine, or another heap's by then).
    std::erase_if(pending, [first](const Segment& s) { return s.run_base == first; });
    std::erase(pending_fresh, first);
  }

  void heap_destroyed() noexcept override {
    while (!tracked.empty()) untrack_run(tracked.begin());
    heap_alive = false;
  }

  void require_alive() const {
    if (!heap_alive) {
      throw SnapshotError(SnapshotErrc::kMisuse,
                          "Snapshotter: its heap was destroyed; create a Snapshotter for the new heap");
    }
  }

  // The file or sink holding `info` is complete: it is the parent of the next increment.
  void saved(const SnapshotInfo& info, std::filesystem::path path) {
    pending.clear();
    pending_fresh.clear();
    broken.clear();
    has_parent = true;
    parent_id = info.id;
    generation = info.generation;
    // A full snapshot starts a new chain and an increment extends this one. A sink's chain is not
    // followed: the next save_increment() after it writes a full snapshot.
    if (path.empty() || info.kind == SnapshotKind::kFull) ancestors.clear();
    if (!path.empty()) ancestors.push_back(canonical_or_normal(path));
    parent_path = std::move(path);
    try {
      detail::note_saved_state(heap->id, info.id);
    } catch (const std::bad_alloc&) {
      // Unrecorded, a later attach() of this file is refused: the safe side.
    }
  }

  // The ancestor `target` names, or null. Spellings are compared once symlinks, "." and ".." are
  // resolved; an existing target is also compared with each ancestor by identity (device and
  // inode, std::filesystem::equivalent), which sees through a bind mount and a hard link. That
  // errs on the side of refusing: rename() would replace a symlink or hard link named as target
  // and leave the ancestor itself alone, but naming an ancestor that way is a mistake too.
  const std::filesystem::path* ancestor_at(const std::filesystem::path& target) const {
    const std::filesystem::path canonical = canonical_or_normal(target);
    std::error_code ec;
    const bool exists = std::filesystem::exists(target, ec);
    for (const std::filesystem::path& ancestor : ancestors) {
      if (ancestor == canonical || (exists && std::filesystem::equivalent(target, ancestor, ec))) {
        return &ancestor;
      }
    }
    return nullptr;
  }

  static std::filesystem::path canonical_or_normal(const std::filesystem::path& file) {
    std::error_code ec;
    std::filesystem::path canonical = std::filesystem::weakly_canonical(file, ec);
    return ec ? std::filesystem::absolute(file, ec).lexically_normal() : canonical;
  }

  std::string mechanism() const {
    return tracking_available ? std::string(WriteTracker::mechanism()) : "none: " + tracking_why;
  }

  // Collects the written pages of every tracked run, extends tracking to the runs' used pages,
  // and returns the segments a file must hold (`increment`: relative to the parent; otherwise
  // all used pages). Fills `fresh` with the runs written as fresh.
  std::vector<Segment> gather(const std::vector<ChunkRun>& runs, bool increment,
                              std::vector<std::uintptr_t>& fresh);

  SnapshotInfo write(ByteSink& sink, bool increment, const std::string& parent_name,
                     const std::string& fallback);
};

std::vector<Segment> Snapshotter::State::gather(const std::vector<ChunkRun>& runs, bool increment,
                                                std::vector<std::uintptr_t>& fresh) {
  // What a failed save collected belongs in the next increment; a full snapshot takes every used
  // page anyway, and must not write zero runs.
  std::vector<Segment> segments = increment ? pending : std::vector<Segment>();
  // Runs the heap no longer has (the observer normally saw them go).
  for (auto it = tracked.begin(); it != tracked.end();) {
    const bool present = std::any_of(runs.begin(), runs.end(), [&](const ChunkRun& r) {
      return r.base == it->first && r.chunks == it->second.chunks;
    });
    if (present) {
      ++it;
    } else {
      const std::uintptr_t base = it->first;
      untrack_run(it);
      it = tracked.upper_bound(base);
    }
  }
  std::vector<PageRange> used;
  std::vector<PageRange> written;
  for (const ChunkRun& run : runs) {
    used.clear();
    used_ranges(heap, run, used);
    auto it = tracked.find(run.base);
    const bool untracked = it == tracked.end();
    const bool is_fresh = untracked || std::find(pending_fresh.begin(), pending_fresh.end(),
                                                 run.base) != pending_fresh.end();
    const std::uintptr_t old_end = untracked ? run.base : it->second.tracked_end;
    if (!untracked && tracking_available) {
      for (const PageRange& r : it->second.ranges) {
        written.clear();
        std::string error;
        const bool ok = tracker.collect(r, written, &error);
        for (const PageRange& w : written) {
          pending.push_back({w, true, run.use, run.base});
          if (increment) segments.push_back(pending.back());
        }
        if (!ok) {
          collect_failed = true;
          if (broken.empty()) broken = "write tracking failed: " + error;
        }
      }
    }
    if (is_fresh) fresh.push_back(run.base);
    if (untracked) pending_fresh.push_back(run.base);
    // Used pages beyond the tracked prefix were zero at the parent. A full snapshot takes every
    // used page; either way the new part is pending until a save succeeds.
    std::uintptr_t used_end = run.base;
    for (const PageRange& u : used) {
      used_end = std::max(used_end, u.end);
      const PageRange part{std::max(u.begin, old_end), u.end};
      if (part.end > part.begin) pending.push_back({part, false, run.use, run.base});
      if (!increment) {
        segments.push_back({u, false, run.use, run.base});
      } else if (part.end > part.begin) {
        segments.push_back({part, false, run.use, run.base});
      }
    }
    if (!tracking_available) continue;
    const std::uintptr_t run_end = run.base + std::uintptr_t{run.chunks} * detail::kChunkSize;
    const std::uintptr_t new_end = std::min(run_end, detail::align_up(used_end, kTrackSpan));
    if (new_end <= old_end) continue;
    TrackedRun& t = tracked[run.base];
    t.chunks = run.chunks;
    std::string error;
    const PageRange more{old_end, new_end};
    if (tracker.track(more, &error)) {
      t.ranges.push_back(more);
      t.tracked_end = new_end;
    } else {
      if (t.ranges.empty()) tracked.erase(run.base);
      if (broken.empty()) broken = "write tracking failed: " + error;
    }
  }
  return segments;
}

SnapshotInfo Snapshotter::State::write(ByteSink& sink, bool increment, const std::string& parent_name,
                                       const std::string& fallback) {
  require_alive();
  if (const std::uint64_t foreign = detail::foreign_frees_of(heap->id); foreign != 0) {
    throw SnapshotError(
        SnapshotErrc::kMisuse,
        "heap " + std::to_string(heap->id) + ": " + std::to_string(foreign) +
            " free(s) of its blocks were ignored because the heap was not current on the freeing "
            "thread (the first was printed on stderr): an object in it may now point outside it "
            "(say, a std::string assigned outside a HeapScope), so a snapshot would not restore. "
            "Nothing was written. Make the heap current (reheap::HeapScope) wherever its objects "
            "change; a build with -DREHEAP_CHECKS=ON stops at the first such free");
  }
  const std::vector<ChunkRun> runs = chunk_runs(heap);
  std::vector<std::uintptr_t> fresh;
  collect_failed = false;
  std::vector<Segment> segments = gather(runs, increment, fresh);
  if (increment && collect_failed) {
    // The increment would miss pages written in the run that failed. Nothing is written; what
    // was collected stays pending, and `broken` makes the next save full.
    throw SnapshotError(SnapshotErrc::kIo, "increment not written: " + broken + "; the next save will be full");
  }

  SnapshotHeader header;
  header.format_version = kFormatVersion;
  header.kind = increment ? SnapshotKind::kIncremental : SnapshotKind::kFull;
  header.id = new_snapshot_id();
  header.parent_id = increment ? parent_id : 0;
  header.parent_file = increment ? parent_name : std::string();
  header.generation = generation + 1;
  header.created_unix_ns = unix_time_ns();
  header.page_size = kPageSize;
  header.chunk_size = detail::kChunkSize;
  const ZoneStats zone = Zone::stats();
  header.zone_base = zone.base;
  header.zone_size = zone.size;
  header.checked_build = detail::kChecks;
  header.heap_id = heap->id;
  header.root = reinterpret_cast<std::uintptr_t>(heap->root);
  header.limit_bytes = heap->limit;
  header.committed_bytes = heap->committed;
  for (const ChunkRun& run : runs) {
    const bool is_fresh =
        increment && std::find(fresh.begin(), fresh.end(), run.base) != fresh.end();
    for (std::uint32_t i = 0; i < run.chunks; ++i) {
      header.chunks.push_back({run.first_index + i, run.use, is_fresh});
    }
  }
  written_runs = runs_of(header.chunks);
  header.layout = current_program_layout();
  header.tracking = mechanism();
  if (NodeIdentity::settled()) {  // it is once the zone is reserved; read, never settled here
    const NodeIdentity node = NodeIdentity::current();
    header.saved_by_node = node.node;
    header.saved_by_incarnation = node.incarnation;
  }

  SnapshotInfo info;
  {
    detail::UnpoisonedFreeBlocks unpoisoned(heap);
    Plan plan = plan_runs(std::move(segments));
    header.pages = plan.counts;
    ProgramScan scan(header.layout);
    for (const PlannedRun& r : plan.runs) {
      if (!r.zero) scan.scan(r.address, std::size_t{r.pages} * kPageSize);
    }
    header.program_refs = scan.refs();
    header.has_program_refs = true;
    SnapshotWriter writer(sink, header);
    for (const PlannedRun& r : plan.runs) {
      if (r.zero) {
        writer.zero_run(r.address, r.pages);
      } else {
        writer.data_run(r.address, r.pages, reinterpret_cast<const void*>(r.address));
      }
    }
    info.bytes_written = writer.finish();
    info.pages_written = plan.data_pages;
    info.zero_pages = increment ? plan.counts.zero : plan.holes;
  }
  info.kind = header.kind;
  info.id = header.id;
  info.parent_id = header.parent_id;
  info.generation = header.generation;
  info.tracking = header.tracking;
  info.fallback_reason = fallback;
  return info;
}

Snapshotter::Snapshotter(Heap& heap, WriteTracking tracking) {
  HeapScope system(nullptr);
  state_ = std::make_unique<State>();
  state_->heap = detail::state(&heap);
  if (detail::zone().observer(state_->heap->id) != nullptr) {
    throw SnapshotError(SnapshotErrc::kMisuse, "Snapshotter: this heap already has a Snapshotter");
  }
  if (tracking == WriteTracking::kOff) {
    state_->tracking_why = "turned off by the Snapshotter's owner";
  } else {
    state_->tracking_available = WriteTracker::available(&state_->tracking_why);
  }
  detail::zone().set_observer(state_->heap->id, state_.get());
}

Snapshotter::~Snapshotter() {
  HeapScope system(nullptr);
  state_.reset();
}

Heap& Snapshotter::heap() const {
  state_->require_alive();
  return *state_->heap;
}

std::string Snapshotter::tracking() const {
  HeapScope system(nullptr);
  return state_->mechanism();
}

namespace {

// Why an incremental request cannot be met, or "".
std::string increment_obstacle(const Snapshotter& s, bool tracking_available, bool has_parent,
                               const std::string& broken, bool tracking_lost) {
  if (!tracking_available) return "no write tracking (" + s.tracking() + ")";
  if (!has_parent) return "no parent snapshot yet (the first snapshot of a Snapshotter is full)";
  if (!broken.empty()) return broken;
  if (tracking_lost) return "write tracking was suspended for a process checkpoint (writes made meanwhile are unknown)";
  return std::string();
}

}  // namespace

SnapshotInfo Snapshotter::write(ByteSink& sink) {
  HeapScope system(nullptr);
  SnapshotInfo info = state_->write(sink, false, std::string(), std::string());
  state_->saved(info, std::filesystem::path());
  return info;
}

SnapshotInfo Snapshotter::write_increment(ByteSink& sink, const std::string& parent_file) {
  HeapScope system(nullptr);
  const std::string obstacle =
      increment_obstacle(*this, state_->tracking_available, state_->has_parent, state_->broken,
                         state_->tracker.lost());
  SnapshotInfo info = state_->write(sink, obstacle.empty(), parent_file, obstacle);
  state_->saved(info, std::filesystem::path());
  return info;
}

SnapshotInfo Snapshotter::save(const std::filesystem::path& file) {
  HeapScope system(nullptr);
  state_->require_alive();
  const std::filesystem::path target = save_target(file, "Snapshotter::save");
  AtomicFile out(target);
  SnapshotInfo info = state_->write(out.sink(), false, std::string(), std::string());
  Publication publication(target, std::move(state_->written_runs));
  info.bytes_written = out.commit(&publication);
  state_->saved(info, target);
  return info;
}

SnapshotInfo Snapshotter::save_increment(const std::filesystem::path& file) {
  HeapScope system(nullptr);
  state_->require_alive();
  const std::filesystem::path target = save_target(file, "Snapshotter::save_increment");
  std::string obstacle =
      increment_obstacle(*this, state_->tracking_available, state_->has_parent, state_->broken,
                         state_->tracker.lost());
  if (obstacle.empty() && state_->parent_path.empty()) {
    obstacle = "the parent snapshot was written to a sink, not a file";
  }
  if (obstacle.empty()) {
    if (const std::filesystem::path* ancestor = state_->ancestor_at(target)) {
      const bool parent = ancestor == &state_->ancestors.back();
      throw SnapshotError(SnapshotErrc::kMisuse,
                          file.string() + ": is an ancestor of the chain being built (" + ancestor->string() +
                              (parent ? ", the new increment's parent" : ", an earlier file of its chain") +
                              "): the increment would replace a snapshot it depends on; save it under "
                              "another name, or start a new chain with save()");
    }
  }
  const std::string parent_name =
      obstacle.empty() ? state_->parent_path.lexically_relative(target.parent_path()).string() : std::string();
  AtomicFile out(target);
  SnapshotInfo info = state_->write(out.sink(), obstacle.empty(), parent_name, obstacle);
  Publication publication(target, std::move(state_->written_runs));
  info.bytes_written = out.commit(&publication);
  state_->saved(info, target);
  return info;
}

void Snapshotter::attach(const std::filesystem::path& file) {
  HeapScope system(nullptr);
  State& s = *state_;
  s.require_alive();
  const SnapshotHeader header = read_snapshot_header(file);
  // The heap must hold the very state the file holds, or the next increment would restore pages
  // of two different states: an older file of the same heap passes every check below.
  const std::optional<std::uint64_t> known = detail::saved_state_of(s.heap->id);
  if (known != header.id) {
    throw SnapshotError(
        SnapshotErrc::kMisuse,
        file.string() + ": attach: the heap does not hold this snapshot's state (snapshot " +
            std::to_string(header.id) + ", generation " + std::to_string(header.generation) + "): " +
            (known ? "it was last restored from or saved as snapshot " + std::to_string(*known)
                   : std::string("it was neither restored from nor saved to a snapshot in this process")) +
            "; attach the file the heap was restored from (the newest of its chain), or save() to start a "
            "new chain");
  }
  const std::vector<ChunkRun> runs = chunk_runs(s.heap);
  std::vector<std::uint32_t> indexes;
  for (const ChunkRun& run : runs) {
    for (std::uint32_t i = 0; i < run.chunks; ++i) indexes.push_back(run.first_index + i);
  }
  std::vector<std::uint32_t> saved;
  for (const SnapshotChunk& c : header.chunks) saved.push_back(c.index);
  if (header.heap_id != s.heap->id || saved != indexes ||
      header.root != reinterpret_cast<std::uintptr_t>(s.heap->root)) {
    throw SnapshotError(SnapshotErrc::kMisuse,
                        file.string() + ": attach: the heap is not in the state this snapshot holds "
                                        "(different heap id, chunks or root)");
  }
  // Start tracking afresh: from now on, writes are changes relative to `file`.
  while (!s.tracked.empty()) s.untrack_run(s.tracked.begin());
  s.pending.clear();
  s.broken.clear();
  std::vector<std::uintptr_t> fresh;
  s.gather(runs, true, fresh);
  SnapshotInfo info;
  info.id = header.id;
  info.generation = header.generation;
  const std::filesystem::path absolute = std::filesystem::absolute(file);
  s.saved(info, absolute);
  // A heap converted between builds, or whose pointers into the program were relocated at
  // restore, holds other bytes than `file`: an increment on it would leave the file's old values
  // in every page it does not hold.
  s.broken = conversion_obstacle(header);
  try {
    if (s.broken.empty() && !Relocation::plan(header, current_program_layout(), {}, file.string()).empty()) {
      s.broken = "the heap was relocated to this program's layout when restored, so its pages differ from " +
                 file.string();
    }
  } catch (const SnapshotError& e) {
    s.broken = std::string("the heap's pointers into the program could not be checked against ") + file.string() +
               ": " + e.what();
  }
  // The next increment continues the chain `file` closes, so it must replace none of its files.
  // A chain that cannot be followed (a parent missing or replaced) cannot be restored whatever is
  // written next; then only `file` itself is known.
  std::vector<std::filesystem::path> chain{absolute};
  try {
    chain = snapshot_chain(absolute);
  } catch (const SnapshotError&) {
    // `chain` still holds `file` alone.
  }
  s.ancestors.clear();
  for (const std::filesystem::path& ancestor : chain) {
    s.ancestors.push_back(State::canonical_or_normal(ancestor));
  }
}

}  // namespace reheap
