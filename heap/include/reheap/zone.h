// The zone: the one range of address space every heap in the process lives in.
//
// At first use the zone reserves [base, base + size) with PROT_NONE and MAP_NORESERVE at a fixed
// address (MAP_FIXED_NOREPLACE: it never replaces an existing mapping). The range is cut into
// 64 MiB chunks; a heap owns a list of chunks, and a zone-wide owner map (one 64-bit entry per
// chunk) says which heap owns any address in O(1). The lower half of the zone holds "class
// chunks" (fixed-size blocks), the upper half "large chunks" (page runs and huge blocks), so that
// an address alone tells which allocator path serves it.
//
// Because the base is fixed, a heap's pages can be mapped back at the same addresses in another
// process (snapshot/restore). Configure the zone before the first heap is created, either with
// Zone::configure() or the environment variables REHEAP_ZONE_BASE and REHEAP_ZONE_SIZE (hex or
// decimal). The zone is never unmapped: it outlives every static object, so `delete` works at any
// point of process exit (see README, "Heap lifetime").
//
// Stale pointers. Chunks a heap gives back (destroyed, or a huge block freed) wait in a
// quarantine before another heap may take them, so that a pointer kept past its heap's life
// lands in a chunk no live heap owns: a delete through it is ignored and counted (release
// builds) or reported naming the destroyed heap (checked builds, which also make the chunks
// inaccessible, so that a read or write through the pointer is reported too; release builds do
// not detect reads and writes, which are undefined behaviour as with any allocator). The guarantee
// lasts while the chunks wait: until `quarantine_chunks` more chunks were given back after them,
// a request can be met only with waiting chunks (exactly those leave), or a snapshot restored in
// the process needs those chunks.
//
// Slices. Each half of the zone is cut into NodeIdentity::kMaxNodes (64) slices, one per node id
// (node_identity.h): in the default 64 TiB zone, 8192 chunks (512 GiB) of each half. A heap
// created in a process takes its first chunk, and any chunk it adds, from its node's slice: the
// first-fit search starts there, wraps around within the slice, and spills into the rest of the
// half (other nodes' slices) only when no run fits in the slice, so there is no cap on heaps per
// process, only on the heaps that stay clear of other nodes. Within the slice, the search starts
// in one of eight windows picked by the process's incarnation (1024 chunks each by default), so
// that the heaps of a restarted node avoid those its previous seven incarnations created, as
// long as each incarnation holds fewer heaps than a window (best effort: random incarnations may
// pick the same window, and a big node fills its slice from the window on). A restore takes exactly
// the chunks its snapshot lists, wherever they lie. What is guaranteed: processes with different
// node ids, each within its slice, never create heaps at addresses the other's snapshots need;
// anything else makes a restore fail with kRangeInUse naming both heaps, never corrupt one.
//
// Thread safety: every function here may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace reheap {

struct ZoneConfig {
  std::uintptr_t base = 0;  // 0: the default for this build (see default_zone_config())
  std::size_t size = 0;     // 0: the default for this build
  // Chunks given back that wait before reuse (64 MiB of address space each, no memory: their
  // pages are discarded). At most an eighth of the zone's chunks; 0 turns the quarantine off.
  std::size_t quarantine_chunks = 4096;
  // The process's node id (0..63), deciding the slice new heaps take chunks from (see above and
  // node_identity.h); -1: REHEAP_NODE, or 0.
  int node = -1;
};

struct ZoneStats {
  std::uintptr_t base = 0;
  std::size_t size = 0;
  std::size_t chunk_size = 0;
  std::size_t class_chunks_in_use = 0;
  std::size_t large_chunks_in_use = 0;
  std::size_t live_heaps = 0;
  std::size_t quarantined_chunks = 0;  // given back, waiting before reuse
  // Where the first-fit search for a new heap's chunks starts in each half (chunk indexes): the
  // node's slice and the incarnation's window in it (see above). Set when the zone is reserved.
  std::size_t class_start_chunk = 0;
  std::size_t large_start_chunk = 0;
  // Frees that named a zone address owned by no heap, or by a heap that is not current on the
  // calling thread, in builds without REHEAP_CHECKS. They are ignored (the block leaks) so that a
  // foreign heap is never corrupted; checked builds abort instead.
  std::size_t ignored_frees = 0;
};

class Zone {
 public:
  // Sets the range and the node before first use. Throws std::logic_error if the zone is already
  // reserved or the config is malformed (unaligned base, size too small, node out of range).
  static void configure(const ZoneConfig& config);

  // The zone's defaults for this build: 64 TiB at 17 TiB (above ASan's shadow, below PIE
  // executables), or 448 GiB at 64 GiB under ThreadSanitizer, whose application ranges are
  // narrower.
  static ZoneConfig default_config() noexcept;

  // True once the address range is reserved (after the first heap was created).
  static bool reserved() noexcept;

  static ZoneStats stats() noexcept;

  // Changes the quarantine's length at any time (clamped to an eighth of the zone's chunks; 0
  // ends it, freeing every waiting chunk). Returns the length it replaces.
  static std::size_t set_quarantine(std::size_t chunks) noexcept;
};

}  // namespace reheap
