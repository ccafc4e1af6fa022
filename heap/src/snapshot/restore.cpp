// restore(): a chain of snapshot files back into the zone, at the same addresses.
//
// The order is what makes a bad file harmless: everything that can be checked before touching
// the zone is (headers, chain, zone, build, layout, size); then the heap's chunks are taken,
// exactly, or not at all; then the files are applied while their checksums are verified; and
// until the allocator state passes its checks, any failure discards and releases every chunk
// taken. No half-restored heap is ever handed out or left behind.
#include <algorithm>
#include <system_error>

#include "../heap_fast.h"
#include "../heap_records.h"
#include "../os/memory.h"
#include "../zone_impl.h"
#include "checked_conversion.h"
#include "format.h"
#include "reheap/heap_scope.h"
#include "reheap/node_identity.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"
#include "relocation.h"
#include "snapshot_registry.h"
#include "state_check.h"

namespace reheap {

using namespace detail::snapshot;
using detail::HeapState;
using detail::kChunkSize;


namespace {

// Chunks taken for the heap being restored; given back to the zone unless kept.
class TakenChunks {
 public:
  // Room for `count` chunks is made first: taking or adopting a chunk then cannot throw (an
  // exception between acquire_at and the record would leave the chunk owned by no heap).
  TakenChunks(detail::HeapId owner, std::size_t count) : owner_(owner) { indexes_.reserve(count); }
  TakenChunks(const TakenChunks&) = delete;
  TakenChunks& operator=(const TakenChunks&) = delete;
  ~TakenChunks() {
    for (std::uint32_t index : indexes_) {
      const std::uintptr_t chunk = detail::ZoneImpl::chunk_address(index);
      detail::os::discard(chunk, kChunkSize);
      detail::zone().release(chunk, 1, owner_);
    }
  }

  bool take(std::uint32_t index) {
    std::uint64_t calls = 0;
    if (!detail::zone().acquire_at(index, 1, owner_, &calls)) return false;
    adopt(index);
    return true;
  }
  // A chunk the heap owns already (the one restore replaces), its pages discarded.
  void adopt(std::uint32_t index) {
    indexes_.push_back(index);
    REHEAP_UNPOISON(reinterpret_cast<void*>(detail::ZoneImpl::chunk_address(index)), kChunkSize);
  }
  void keep() noexcept { indexes_.clear(); }

 private:
  detail::HeapId owner_;
  std::vector<std::uint32_t> indexes_;
};

// Ends the heap a restore replaces, keeping its chunks owned (not given back to the zone, where
// another thread could take them): returns their indexes, sorted.
std::vector<std::uint32_t> retire(Heap* heap) {
  std::vector<std::uint32_t> chunks;
  // discard_heap is noexcept and its callback pushes: room first, so nothing throws there.
  chunks.reserve(detail::state(heap)->class_chunks + detail::state(heap)->large_chunks);
  detail::discard_heap(detail::state(heap), &chunks,
                       [](void* context, std::uintptr_t first, std::size_t count, detail::HeapId) {
                         auto* out = static_cast<std::vector<std::uint32_t>*>(context);
                         const auto index = static_cast<std::uint32_t>(
                             (first - detail::g_zone.base.load(std::memory_order_relaxed)) >> detail::kChunkShift);
                         for (std::size_t i = 0; i < count; ++i) out->push_back(index + static_cast<std::uint32_t>(i));
                       });
  std::sort(chunks.begin(), chunks.end());
  return chunks;
}

void check_geometry(const SnapshotHeader& h, const std::string& name) {
  if (h.page_size != kPageSize || h.chunk_size != kChunkSize) {
    fail(SnapshotErrc::kZoneMismatch, name,
         "saved with " + std::to_string(h.page_size) + "-byte pages and " + std::to_string(h.chunk_size) +
             "-byte chunks; this build uses " + std::to_string(kPageSize) + " and " + std::to_string(kChunkSize));
  }
}

void check_zone(const SnapshotHeader& h, const std::string& name) {
  if (!Zone::reserved()) {
    try {
      detail::zone().configure_range(h.zone_base, h.zone_size);
      detail::zone().ensure_reserved();
    } catch (const std::exception& e) {
      if (!Zone::reserved()) {
        fail(SnapshotErrc::kZoneMismatch, name,
             std::string("cannot reserve the snapshot's zone in this process: ") + e.what());
      }
    }
  }
  const ZoneStats zone = Zone::stats();
  if (zone.base != h.zone_base || zone.size != h.zone_size) {
    char what[256];
    std::snprintf(what, sizeof what,
                  "saved in the zone [%#llx, +%#llx), this process's zone is [%#llx, +%#llx): set "
                  "REHEAP_ZONE_BASE/REHEAP_ZONE_SIZE or call Zone::configure before the first heap",
                  static_cast<unsigned long long>(h.zone_base), static_cast<unsigned long long>(h.zone_size),
                  static_cast<unsigned long long>(zone.base), static_cast<unsigned long long>(zone.size));
    fail(SnapshotErrc::kZoneMismatch, name, what);
  }
}

// Why chunk `index` cannot be taken, naming both heaps that want it and how to avoid that.
std::string collision(const SnapshotHeader& h, std::uint32_t index) {
  const std::uintptr_t address = detail::ZoneImpl::chunk_address(index);
  const detail::HeapId owner = detail::ZoneImpl::owner_of(address);
  char where[64];
  std::snprintf(where, sizeof where, "%#llx", static_cast<unsigned long long>(address));
  std::string saved_by = "saved by an unrecorded node";
  if (h.saved_by_node >= 0) {
    saved_by = "saved by node " + std::to_string(h.saved_by_node) + " incarnation " +
               std::to_string(h.saved_by_incarnation);
  }
  const NodeIdentity here = NodeIdentity::current();
  const bool restored = detail::zone().restored_here(owner);
  // Heap ids repeat between processes (first chunk and a per-process generation): the same id
  // is the same heap only if this process saved it or restored it.
  const bool saved_here = h.saved_by_node < 0 || (h.saved_by_node == here.node &&
                                                  h.saved_by_incarnation == here.incarnation);
  if (owner == h.heap_id && (restored || saved_here)) {
    return "the heap's chunk " + std::to_string(index) + " at " + where + " is in use in this process: heap " +
           std::to_string(h.heap_id) + " is still alive here (destroy it first, or restore in another process)";
  }
  std::string message = "the heap's chunk " + std::to_string(index) + " at " + where + " belongs to live heap " +
                        std::to_string(owner) + " (" +
                        (restored ? "restored in this process from another snapshot" : "created in this process") +
                        ", node " + std::to_string(here.node) + " incarnation " + std::to_string(here.incarnation) +
                        (owner == h.heap_id ? ", another heap than the snapshot's though the ids are equal: ids "
                                              "repeat between processes"
                                            : "") +
                        "); the snapshot holds heap " + std::to_string(h.heap_id) + ", " + saved_by + ". ";
  const std::filesystem::path registry = registry_file();
  if (h.saved_by_node >= 0 && h.saved_by_node != here.node) {
    return message +
           "Give processes that exchange snapshots different node ids (REHEAP_NODE, ZoneConfig::node, "
           "RuntimeConfig::node) and keep each within its slice of the zone, or restore before creating heaps "
           "(spawning reactors)";
  }
  if (registry.empty()) {
    return message +
           "Without a state directory a node's new heaps may take the chunks of the snapshots it saved (a "
           "restart that creates heaps before restoring does so with odds of up to 1 in 8 per placement "
           "window the snapshot's chunks lie in, heap/README.md \"Held for restore\"): give the node one "
           "(REHEAP_STATE_DIR, RuntimeConfig::state_dir or NodeIdentityConfig::state_dir), and its saved "
           "snapshots' chunks are kept out of new heaps' way; or restore before creating heaps (spawning reactors)";
  }
  return message + "The node's registry of saved snapshots (" + registry.string() +
         ") did not list this file when the process started (saved before the node had its state directory, "
         "copied in, or saved by a process of this node running at the same time): restore before creating "
         "heaps (spawning reactors); once restored and saved again the file is held";
}

bool listed(const std::vector<SnapshotChunk>& chunks, std::uint32_t index) {
  return std::binary_search(chunks.begin(), chunks.end(), SnapshotChunk{index, ChunkUse::kClass, false},
                            [](const SnapshotChunk& a, const SnapshotChunk& b) { return a.index < b.index; });
}

// The relocation of a file's pages into this process's layout (LayoutCheck::kRelocate), or the
// stricter checks, which relocate nothing. Throws kLayoutMismatch for what cannot be mapped.
Relocation relocation_for(const SnapshotHeader& h, const std::string& name, const ProgramLayout& now,
                          const RestoreOptions& options) {
  if (options.layout == LayoutCheck::kRelocate) {
    return Relocation::plan(h, now, {.relink_libraries = options.relink_libraries}, name);
  }
  const std::string difference = layout_difference(h.layout, now, options.layout);
  if (!difference.empty()) fail(SnapshotErrc::kLayoutMismatch, name, difference);
  return Relocation();
}

// Applies one file of the chain to the taken chunks. `final` is the chain's last header.
void apply(SnapshotReader& reader, const SnapshotHeader& final, const Relocation& relocation) {
  const SnapshotHeader& h = reader.header();
  for (const SnapshotChunk& c : h.chunks) {
    if (c.fresh && listed(final.chunks, c.index)) {
      detail::os::discard(detail::ZoneImpl::chunk_address(c.index), kChunkSize);
    }
  }
  PageRun run;
  while (reader.next(run)) {
    const auto index = static_cast<std::uint32_t>((run.address - final.zone_base) / kChunkSize);
    const std::size_t bytes = std::size_t{run.pages} * kPageSize;
    if (!listed(final.chunks, index)) {
      if (!run.zero) reader.skip_data();  // a chunk the heap gave back later in the chain
      continue;
    }
    if (run.zero) {
      detail::os::discard(run.address, bytes);
      continue;
    }
    detail::os::populate(run.address, bytes);
    reader.read_data(reinterpret_cast<void*>(run.address));
    if (!relocation.empty()) relocation.apply(run.address, bytes);
  }
}

// `replaced`: a live heap with the snapshot's id, ended by the restore in every outcome; its
// chunks pass to the restored heap without going back to the zone.
HeapPtr restore_chain(const std::vector<std::filesystem::path>& files, ByteSource* stream,
                      const RestoreOptions& options, HeapPtr replaced) {
  // The last file decides what the heap is; check everything about it before touching the zone.
  std::unique_ptr<SnapshotReader> last_reader =
      stream != nullptr ? std::make_unique<SnapshotReader>(*stream, "<stream>")
                        : std::make_unique<SnapshotReader>(files.back());
  const SnapshotHeader final = last_reader->header();
  const std::string& name = last_reader->name();
  if (stream != nullptr && final.kind != SnapshotKind::kFull) {
    fail(SnapshotErrc::kBrokenChain, name,
         "an increment cannot be restored from a stream (its parents are files): restore the file");
  }
  check_geometry(final, name);
  const ProgramLayout now = current_program_layout();
  const Relocation final_relocation = relocation_for(final, name, now, options);
  if (final.committed_bytes > options.limit_bytes) {
    fail(SnapshotErrc::kOverLimit, name,
         "the heap holds " + std::to_string(final.committed_bytes) + " bytes, more than the limit of " +
             std::to_string(options.limit_bytes));
  }
  check_zone(final, name);
  const std::size_t class_chunks = Zone::stats().size / kChunkSize / 2;
  for (const SnapshotChunk& c : final.chunks) {
    if ((c.use == ChunkUse::kClass) != (c.index < class_chunks)) {
      fail(SnapshotErrc::kCorrupt, name, "chunk " + std::to_string(c.index) + " lies in the wrong half of the zone");
    }
  }

  TakenChunks taken(final.heap_id, final.chunks.size());
  std::vector<std::uint32_t> adopted;
  adopted.reserve(final.chunks.size());
  if (replaced != nullptr) {
    if (replaced->id() != final.heap_id) {
      fail(SnapshotErrc::kMisuse, name,
           "restore_replacing was given heap " + std::to_string(replaced->id()) +
               ", but the snapshot holds heap " + std::to_string(final.heap_id));
    }
    for (std::uint32_t index : retire(replaced.release())) {
      if (listed(final.chunks, index)) {
        taken.adopt(index);
        adopted.push_back(index);
      } else {
        detail::zone().release(detail::ZoneImpl::chunk_address(index), 1, final.heap_id);
      }
    }
  }
  for (const SnapshotChunk& c : final.chunks) {
    if (std::binary_search(adopted.begin(), adopted.end(), c.index)) continue;
    if (!taken.take(c.index)) fail(SnapshotErrc::kRangeInUse, name, collision(final, c.index));
  }
  // The chain was checked by snapshot_chain(); check again that the files read now are the ones
  // it saw, in case one was replaced meanwhile.
  std::uint64_t previous_id = 0;
  for (std::size_t i = 0; i + 1 < files.size(); ++i) {
    SnapshotReader reader(files[i]);
    const SnapshotHeader& h = reader.header();
    if (h.parent_id != previous_id || h.heap_id != final.heap_id || h.checked_build != final.checked_build) {
      fail(SnapshotErrc::kBrokenChain, reader.name(), "changed while the chain was being restored");
    }
    previous_id = h.id;
    apply(reader, final, relocation_for(h, reader.name(), now, options));
  }
  if (files.size() > 1 && final.parent_id != previous_id) {
    fail(SnapshotErrc::kBrokenChain, name, "its parent changed while the chain was being restored");
  }
  apply(*last_reader, final, final_relocation);
  const std::size_t committed = check_restored_state(final, name);
  if (committed > options.limit_bytes) {
    fail(SnapshotErrc::kOverLimit, name,
         "the heap holds " + std::to_string(committed) + " bytes, more than the limit of " +
             std::to_string(options.limit_bytes));
  }

  HeapState* h = detail::heap_at(detail::ZoneImpl::chunk_address(detail::first_chunk_of(final.heap_id)));
  convert_build_flavour(final, h);  // after the check: it follows the free lists
  detail::poison_free_blocks(h);
  detail::zone().heap_created();
  detail::zone().mark_restored(final.heap_id);
  try {
    detail::note_saved_state(final.heap_id, final.id);
  } catch (const std::bad_alloc&) {
    // Unrecorded, an attach() of this file is refused: the safe side.
  }
  taken.keep();
  return HeapPtr(h);
}

}  // namespace

HeapPtr restore(const std::filesystem::path& file, const RestoreOptions& options) {
  HeapScope system(nullptr);
  return restore_chain(snapshot_chain(file), nullptr, options, nullptr);
}

HeapPtr restore(ByteSource& source, const RestoreOptions& options) {
  HeapScope system(nullptr);
  return restore_chain({}, &source, options, nullptr);
}

HeapPtr restore_replacing(HeapPtr heap, const std::filesystem::path& file, const RestoreOptions& options) {
  HeapScope system(nullptr);
  std::vector<std::filesystem::path> chain;
  try {
    chain = snapshot_chain(file);
  } catch (...) {
    heap.reset();  // ended in every outcome, as promised
    throw;
  }
  return restore_chain(chain, nullptr, options, std::move(heap));
}

HeapPtr restore_replacing(HeapPtr heap, ByteSource& source, const RestoreOptions& options) {
  HeapScope system(nullptr);
  return restore_chain({}, &source, options, std::move(heap));
}

}  // namespace reheap
