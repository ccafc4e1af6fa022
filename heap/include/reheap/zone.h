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
// point of process exit (see heap/README.md, "Heap lifetime").
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
// Recycling. A heap destroyed whose first chunk holds at most HeapCacheConfig::max_heap_bytes
// is not released but kept, its pages committed, in the zone's heap cache (its other chunks are
// released as above); Heap::create, on any thread, takes the oldest cached heap once more than
// HeapCacheConfig::delay heaps wait behind it, so a create and destroy cost neither madvise nor
// page faults (and a runtime, which creates a reactor's heap on the spawning thread and destroys
// it on the worker that ran it, recycles across threads). Whatever the old heap wrote is
// invisible to the new one: its header page is cleared (the state by the destroying thread), and
// the bytes the old heaps carved in a page of its lanes are zeroed when the new heap's carving
// first reaches that page (the rest of the page is zero already), so that the new heap, and any
// snapshot of it, sees zeros or its own bytes only. While cached, the chunk is tombstoned as in quarantine.
// So the stale-pointer guarantee above holds, for a heap that went to the cache, until `delay`
// (default 16) more heaps were destroyed in the process after it; then a stale pointer may reach
// a live heap, as with any allocator. Builds with REHEAP_CHECKS start with the cache off (heaps =
// 0): there every destroyed heap goes to the quarantine and the full guarantee holds. The cache
// is bounded (`heaps`, `bytes`); past a bound its oldest heaps are given back (madvise, then the
// quarantine) until it is an eighth below; purge_heap_cache() gives back all of them (the
// runtime's workers call it after half a second asleep). A restore needing a cached heap's chunk
// takes it (its pages discarded first). Cached heaps are counted in ZoneStats (cached_heaps,
// retained_bytes), in no heap's stats.
//
// Retention. A live heap that frees a huge block (more than 1 MiB) keeps its run of chunks,
// pages committed, for its next huge block, instead of giving the pages back to the OS at once:
// a vector or hash table that keeps growing and shrinking past 1 MiB then costs no madvise and no
// page fault per cycle (an allocator that gives the pages back faults in every page of every
// cycle again: docs/benchmarks.md, seed 004).
// A heap keeps at most RetainConfig::heap_bytes of such runs (Heap::set_retain_limit changes it
// for one heap) and 8 runs; what it keeps counts in its committed bytes and limit, and a heap at
// its limit gives it back before refusing an allocation. Which run a huge block gets depends on
// the heap's own allocations and frees only, so a replay gets the same addresses as the run it
// replays. Separately, the *pages* of retained runs are purged (madvise) while the runs stay the
// heap's: once the oldest is `purge_delay` old (checked at the heap's next huge allocation or
// free), when the zone's resident retained bytes pass `resident_bytes` (the heap retaining
// purges its own), by Heap::purge_retained(), and by a runtime worker asleep half a second since
// its reactors last ran. Purging changes nothing a program observes but its RSS: retained blocks
// are in no snapshot and no digest. Builds with REHEAP_CHECKS start with heap_bytes = 0, so that
// every freed huge block goes to the quarantine and a use after free is reported. Freed memory
// that stays in place is purged too, by that runtime worker, for reactors that are not
// recorded (purged memory reads as zero, which a recording's digests would see): free page runs
// (Heap::purge_free_runs) and size-class lanes none of whose blocks is live
// (Heap::purge_free_lanes), so a reactor's freed burst of small objects leaves its RSS too.
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
// with a state directory, a node never creates heaps at addresses its own saved snapshots need
// (below); anything else makes a restore fail with kRangeInUse naming both heaps, never corrupt one.
//
// Held for restore. With a state directory (node_identity.h), every snapshot file a process
// saves (Snapshotter::save and save_increment, and so the runtime's snapshots and recording
// anchors; compact()'s output once the zone is reserved) is listed in the node's registry there,
// and the chunks it names are held: no new heap, and no growing heap, of the node takes them - in
// the saving process (a heap saved and destroyed leaves its chunks held), and in every later
// process of the node, which reads the registry when it reserves its zone, dropping the files
// deleted or replaced by something else meanwhile. A restore takes held chunks like any others. A
// hold ends when its file is deleted with remove_snapshot() (reheap/snapshot.h) or found gone (at
// the next start, or when a process that saved many new files rewrites the registry), or saved
// again with other chunks. So a restarted node restores the snapshots it saved after it spawned
// heaps, at every incarnation. Costs: held chunks are address space only (their pages are
// discarded); a save takes the node's flock around its rename, and a save under a name the
// registry does not list yet appends and fsyncs a line first; a start reads the header of every
// listed file (heap/README.md, "Held for restore", has the numbers). Not covered: snapshots saved
// before the node had its state directory, by another node, or by a process of the node running
// at the same time (each process reads the registry once, at its start). When held and used
// chunks fill the node's slice, new heaps spill into other slices as above, and the zone says so
// on stderr, once; when they fill a half, the request fails (Heap::create throws std::bad_alloc,
// an allocation returns null) and the zone says why: a held chunk is never handed to a new heap.
// Without a state directory nothing is held, and a restart that creates heaps before it restores
// collides with a saved heap whenever its random incarnation picks a window that heap's chunks
// lie in: up to 1 chance in 8 per restart and window (heap/README.md works the odds out).
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
  // Heaps held in the heap cache for reuse (see "Recycling"), and the pages they keep committed:
  // memory no live heap counts, that purge_heap_cache() or the cache's bounds give back.
  std::size_t cached_heaps = 0;
  std::size_t retained_bytes = 0;
  // Chunks held for the restore of snapshots this node saved (see "Held for restore"): address
  // space no new heap takes, and no memory.
  std::size_t held_chunks = 0;
  // Where the first-fit search for a new heap's chunks starts in each half (chunk indexes): the
  // node's slice and the incarnation's window in it (see above). Set when the zone is reserved.
  std::size_t class_start_chunk = 0;
  std::size_t large_start_chunk = 0;
  // Frees that named a zone address owned by no heap, or by a heap that is not current on the
  // calling thread, in builds without REHEAP_CHECKS. They are ignored (the block leaks) so that a
  // foreign heap is never corrupted; checked builds abort instead.
  std::size_t ignored_frees = 0;
};

// The heap cache (see "Recycling").
struct HeapCacheConfig {
  std::size_t heaps = 2048;  // heaps the cache keeps at most (clamped to 4096; 0: no recycling)
  std::size_t bytes = std::size_t{64} << 20;  // committed bytes it keeps at most
  // A cached heap is reused only once this many heaps were destroyed after it.
  std::size_t delay = 16;
  // A dying heap whose first chunk has more pages committed is released, not cached.
  std::size_t max_heap_bytes = std::size_t{1} << 20;
};

// Retention (see "Retention").
struct RetainConfig {
  // Freed huge blocks a new heap keeps for reuse, in bytes (header page included), at most.
  std::size_t heap_bytes = std::size_t{64} << 20;
  // Retained bytes left resident in the whole zone, at most.
  std::size_t resident_bytes = std::size_t{64} << 20;
  // How long retained pages stay resident before the heap purges them.
  std::uint32_t purge_delay_ms = 1000;
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

  // The heap cache's settings (see "Recycling"): HeapCacheConfig's defaults, or heaps = 0 in
  // builds with REHEAP_CHECKS. New settings apply from the next destroy or create on (a cache
  // over its new bounds shrinks at the next destroy, or purge_heap_cache()). Returns the
  // settings replaced.
  static HeapCacheConfig heap_cache() noexcept;
  static HeapCacheConfig set_heap_cache(const HeapCacheConfig& config) noexcept;

  // Gives back to the OS every heap the cache holds (madvise, then the zone's quarantine).
  // Returns the bytes given back. Changes nothing a program observes but its RSS (and which
  // chunk, so which address and id, a later heap gets).
  static std::size_t purge_heap_cache() noexcept;
  // The committed bytes the heap cache holds (ZoneStats::retained_bytes) without the zone lock,
  // for an idle path to ask.
  static std::size_t heap_cache_bytes() noexcept;

  // Retention's settings (see "Retention"): RetainConfig's defaults, or heap_bytes = 0 in builds
  // with REHEAP_CHECKS. heap_bytes applies to heaps created (or restored) from then on; the rest
  // at once. Returns the settings replaced.
  static RetainConfig retention() noexcept;
  static RetainConfig set_retention(const RetainConfig& config) noexcept;
  // The bytes of retained huge blocks still resident in every heap, without the zone lock, for
  // an idle path to ask.
  static std::size_t retained_resident_bytes() noexcept;
};

}  // namespace reheap
