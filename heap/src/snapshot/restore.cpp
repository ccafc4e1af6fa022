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
#include "../os.h"
#include "../zone_impl.h"
#include "format.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"

namespace reheap {

using namespace detail::snapshot;
using detail::HeapState;
using detail::kChunkSize;


namespace {

// Chunks taken from the zone for the heap being restored; given back unless released().
class TakenChunks {
 public:
  TakenChunks() = default;
  TakenChunks(const TakenChunks&) = delete;
  TakenChunks& operator=(const TakenChunks&) = delete;
  ~TakenChunks() {
    for (std::uint32_t index : indexes_) {
      const std::uintptr_t chunk = detail::ZoneImpl::chunk_address(index);
      detail::os::discard(chunk, kChunkSize);
      detail::zone().release(chunk, 1);
    }
  }

  bool take(std::uint32_t index, std::uint32_t owner) {
    std::uint64_t calls = 0;
    if (!detail::zone().acquire_at(index, 1, owner, &calls)) return false;
    indexes_.push_back(index);
    REHEAP_UNPOISON(reinterpret_cast<void*>(detail::ZoneImpl::chunk_address(index)), kChunkSize);
    return true;
  }
  void keep() noexcept { indexes_.clear(); }

 private:
  std::vector<std::uint32_t> indexes_;
};

void check_geometry(const SnapshotHeader& h, const std::string& name) {
  if (h.page_size != kPageSize || h.chunk_size != kChunkSize) {
    fail(SnapshotErrc::kZoneMismatch, name,
         "saved with " + std::to_string(h.page_size) + "-byte pages and " + std::to_string(h.chunk_size) +
             "-byte chunks; this build uses " + std::to_string(kPageSize) + " and " + std::to_string(kChunkSize));
  }
  if (h.checked_build != detail::kChecks) {
    fail(SnapshotErrc::kZoneMismatch, name,
         std::string("saved by a build ") + (h.checked_build ? "with" : "without") +
             " REHEAP_CHECKS, restored by one " + (detail::kChecks ? "with" : "without") +
             " (the checked build keeps extra allocator state): restore with the same build");
  }
}

void check_zone(const SnapshotHeader& h, const std::string& name) {
  if (!Zone::reserved()) {
    try {
      Zone::configure(ZoneConfig{h.zone_base, h.zone_size});
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

bool listed(const std::vector<SnapshotChunk>& chunks, std::uint32_t index) {
  return std::binary_search(chunks.begin(), chunks.end(), SnapshotChunk{index, ChunkUse::kClass, false},
                            [](const SnapshotChunk& a, const SnapshotChunk& b) { return a.index < b.index; });
}

// Applies one file of the chain to the taken chunks. `final` is the chain's last header.
void apply(SnapshotReader& reader, const SnapshotHeader& final) {
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
  }
}

// The restored allocator state agrees with the header: same heap id and root, and its chunk
// lists name exactly the listed chunks.
void check_state(const SnapshotHeader& h, const std::string& name) {
  const std::uintptr_t first = detail::ZoneImpl::chunk_address(h.heap_id - 1);
  const HeapState* state = detail::heap_at(first);
  auto bad = [&](const char* what) {
    fail(SnapshotErrc::kCorrupt, name, std::string("the restored allocator state is inconsistent: ") + what);
  };
  if (state->id != h.heap_id) bad("heap id");
  if (reinterpret_cast<std::uintptr_t>(state->root) != h.root) bad("root");
  std::size_t seen = 0;
  const std::size_t limit = h.chunks.size();
  auto index_of = [&](std::uintptr_t chunk) {
    return static_cast<std::uint32_t>((chunk - h.zone_base) >> detail::kChunkShift);
  };
  auto in_zone = [&](const void* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return a >= h.zone_base && a - h.zone_base < h.zone_size;
  };
  for (const detail::ChunkHeader* c = state->class_head; c != nullptr; c = c->next) {
    if (!in_zone(c) || ++seen > limit) bad("class chunk list");
    const std::uintptr_t chunk = detail::chunk_of(c, true);
    if (!listed(h.chunks, index_of(chunk)) || c->kind != detail::ChunkKind::kClass || c->owner != h.heap_id) {
      bad("class chunk list");
    }
  }
  for (const detail::ChunkHeader* c = state->large_head; c != nullptr; c = c->next) {
    if (!in_zone(c) || c->run_chunks == 0 || c->run_chunks > limit) bad("large chunk list");
    seen += c->run_chunks;
    if (seen > limit) bad("large chunk list");
    for (std::uint32_t i = 0; i < c->run_chunks; ++i) {
      if (!listed(h.chunks, index_of(reinterpret_cast<std::uintptr_t>(c)) + i)) bad("large chunk list");
    }
    if ((c->kind != detail::ChunkKind::kLarge && c->kind != detail::ChunkKind::kHuge) || c->owner != h.heap_id) {
      bad("large chunk list");
    }
  }
  if (seen != limit) bad("chunk count");
}

HeapPtr restore_chain(const std::vector<std::filesystem::path>& files, ByteSource* stream,
                      const RestoreOptions& options) {
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
  const std::string difference = layout_difference(final.layout, current_program_layout(), options.layout);
  if (!difference.empty()) fail(SnapshotErrc::kLayoutMismatch, name, difference);
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

  TakenChunks taken;
  for (const SnapshotChunk& c : final.chunks) {
    if (!taken.take(c.index, final.heap_id)) {
      char what[200];
      std::snprintf(what, sizeof what,
                    "the heap's chunk %u at %#llx is in use in this process (is the heap still alive? "
                    "destroy it first, or restore in another process)",
                    c.index, static_cast<unsigned long long>(detail::ZoneImpl::chunk_address(c.index)));
      fail(SnapshotErrc::kRangeInUse, name, what);
    }
  }
  // The chain was checked by snapshot_chain(); check again that the files read now are the ones
  // it saw, in case one was replaced meanwhile.
  std::uint64_t previous_id = 0;
  for (std::size_t i = 0; i + 1 < files.size(); ++i) {
    SnapshotReader reader(files[i]);
    const SnapshotHeader& h = reader.header();
    if (h.parent_id != previous_id || h.heap_id != final.heap_id) {
      fail(SnapshotErrc::kBrokenChain, reader.name(), "changed while the chain was being restored");
    }
    previous_id = h.id;
    apply(reader, final);
  }
  if (files.size() > 1 && final.parent_id != previous_id) {
    fail(SnapshotErrc::kBrokenChain, name, "its parent changed while the chain was being restored");
  }
  apply(*last_reader, final);
  check_state(final, name);

  HeapState* h = detail::heap_at(detail::ZoneImpl::chunk_address(final.heap_id - 1));
  detail::poison_free_blocks(h);
  detail::zone().heap_created();
  taken.keep();
  return HeapPtr(h);
}

}  // namespace

HeapPtr restore(const std::filesystem::path& file, const RestoreOptions& options) {
  HeapScope system(nullptr);
  return restore_chain(snapshot_chain(file), nullptr, options);
}

HeapPtr restore(ByteSource& source, const RestoreOptions& options) {
  HeapScope system(nullptr);
  return restore_chain({}, &source, options);
}

}  // namespace reheap
