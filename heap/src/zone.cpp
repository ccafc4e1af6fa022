// The zone (zone_impl.h): reserving it, the chunk bitmaps and the owner map, acquiring and
// releasing runs of chunks, and its statistics. Its heap cache is in zone_cache.cpp, its
// quarantine in zone_quarantine.cpp.
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>

#include "os/memory.h"
#include "reheap/node_identity.h"
#include "report.h"
#include "snapshot/snapshot_registry.h"
#include "stale_access.h"
#include "zone_impl.h"

namespace reheap {
namespace detail {

constinit ZoneBounds g_zone;

ZoneImpl& zone() noexcept {
  // Placement-constructed in static storage and never destroyed: see zone_impl.h.
  alignas(ZoneImpl) static unsigned char storage[sizeof(ZoneImpl)];
  static ZoneImpl* const instance = new (storage) ZoneImpl();
  return *instance;
}

namespace {

std::uintptr_t env_number(const char* name, std::uintptr_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text, &end, 0);
  if (errno != 0 || end == text || *end != '\0') {
    throw std::invalid_argument(std::string("reheap: ") + name + "=" + text +
                                " is not a number (use decimal or 0x-prefixed hex)");
  }
  return static_cast<std::uintptr_t>(value);
}

void validate(const ZoneConfig& c) {
  if (c.base % kChunkSize != 0) {
    throw std::logic_error("reheap: zone base must be a multiple of 64 MiB");
  }
  if (c.size < 4 * kChunkSize || c.size % (2 * kChunkSize) != 0) {
    throw std::logic_error("reheap: zone size must be a multiple of 128 MiB and at least 256 MiB");
  }
  if (c.base == 0 || c.base + c.size < c.base || c.base + c.size > (std::uintptr_t{1} << 47)) {
    throw std::logic_error("reheap: zone range must lie in the 47-bit user address space");
  }
}

}  // namespace

void ZoneImpl::configure(const ZoneConfig& config) {
  std::lock_guard lock(mutex_);
  if (reserved()) throw std::logic_error("reheap: Zone::configure called after the zone was reserved");
  ZoneConfig c = config;
  const ZoneConfig d = Zone::default_config();
  if (c.base == 0) c.base = d.base;
  if (c.size == 0) c.size = d.size;
  validate(c);
  if (c.node < -1 || c.node >= static_cast<int>(NodeIdentity::kMaxNodes)) {
    throw std::logic_error("reheap: ZoneConfig::node " + std::to_string(c.node) + " is out of range (0.." +
                           std::to_string(NodeIdentity::kMaxNodes - 1) + ")");
  }
  if (c.node >= 0) NodeIdentity::configure(NodeIdentityConfig{c.node, {}});
  config_ = c;
}

void ZoneImpl::configure_range(std::uintptr_t base, std::size_t size) {
  std::lock_guard lock(mutex_);
  if (reserved()) throw std::logic_error("reheap: Zone::configure called after the zone was reserved");
  ZoneConfig c = config_;  // keeps what else was configured (the quarantine)
  c.base = base;
  c.size = size;
  validate(c);
  config_ = c;
}

void ZoneImpl::ensure_reserved() {
  if (reserved()) return;
  std::lock_guard lock(mutex_);
  if (!reserved()) reserve_locked();
}

void ZoneImpl::reserve_locked() {
  ZoneConfig c = config_;
  if (c.base == 0) c.base = env_number("REHEAP_ZONE_BASE", Zone::default_config().base);
  if (c.size == 0) c.size = env_number("REHEAP_ZONE_SIZE", Zone::default_config().size);
  validate(c);
  if (os::page_size() != kPageSize) {
    throw std::runtime_error("reheap: the heap needs 4 KiB pages; this system uses " +
                             std::to_string(os::page_size()));
  }
  // Settled before anything is reserved, so that an unusable state directory leaves the zone as
  // it was (and its message reaches the caller).
  const NodeIdentity identity = NodeIdentity::current();
  // Likewise the chunks the node's saved snapshots hold (snapshot/snapshot_registry.h): a registry
  // that cannot be read stops the reservation with a message naming it.
  const std::vector<snapshot::HeldRun> held = snapshot::load_registry(c.base, c.size);
  chunks_ = c.size / kChunkSize;
  class_chunks_ = chunks_ / 2;
  const std::size_t bitmap_bytes = align_up(chunks_, 64) / 8;
  auto* owners = static_cast<std::atomic<std::uint64_t>*>(
      os::map_table(chunks_ * sizeof(std::atomic<std::uint64_t>)));
  used_ = static_cast<std::uint64_t*>(os::map_table(bitmap_bytes));
  quarantined_ = static_cast<std::uint64_t*>(os::map_table(bitmap_bytes));
  protected_ = static_cast<std::uint64_t*>(os::map_table(bitmap_bytes));
  generation_ = static_cast<std::uint32_t*>(os::map_table(class_chunks_ * sizeof(std::uint32_t)));
  fifo_ = static_cast<QuarantinedRun*>(os::map_table(chunks_ * sizeof(QuarantinedRun)));
  released_ = static_cast<std::uint32_t*>(os::map_table(chunks_ * sizeof(std::uint32_t)));
  restored_ = static_cast<std::uint64_t*>(os::map_table(bitmap_bytes));
  retained_pages_ = static_cast<std::uint32_t*>(os::map_table(class_chunks_ * sizeof(std::uint32_t)));
  cache_ring_ = static_cast<CachedChunk*>(os::map_table((kMaxCachedHeaps + 1) * sizeof(CachedChunk)));
  observers_ = static_cast<std::atomic<ChunkObserver*>*>(
      os::map_table(chunks_ * sizeof(std::atomic<ChunkObserver*>)));
  residency_ = static_cast<Residency*>(os::map_table(class_chunks_ * sizeof(Residency)));
  taking_ = static_cast<ChunkTaking*>(os::map_table(class_chunks_ * sizeof(ChunkTaking)));
  held_ = static_cast<std::uint64_t*>(os::map_table(bitmap_bytes));
  hold_counts_ = static_cast<std::uint32_t*>(os::map_table(chunks_ * sizeof(std::uint32_t)));
  if (owners == nullptr || used_ == nullptr || quarantined_ == nullptr || protected_ == nullptr ||
      generation_ == nullptr || fifo_ == nullptr || released_ == nullptr || observers_ == nullptr ||
      restored_ == nullptr || retained_pages_ == nullptr || held_ == nullptr || hold_counts_ == nullptr ||
      cache_ring_ == nullptr || residency_ == nullptr || taking_ == nullptr) {
    throw std::system_error(ENOMEM, std::generic_category(), "reheap: zone tables");
  }
  if (int err = os::reserve_fixed(c.base, c.size)) {
    char where[160];
    std::snprintf(where, sizeof where,
                  "reheap: cannot reserve the zone [%#lx, %#lx) (set REHEAP_ZONE_BASE / "
                  "REHEAP_ZONE_SIZE or call reheap::Zone::configure to move it)",
                  static_cast<unsigned long>(c.base), static_cast<unsigned long>(c.base + c.size));
    throw std::system_error(err, std::generic_category(), where);
  }
  config_ = c;
  quarantine_limit_ = std::min(c.quarantine_chunks, chunks_ / 8);
  hint_[0] = 0;
  hint_[1] = class_chunks_;
  accessible_end_[0] = 0;
  accessible_end_[1] = class_chunks_;
  place_locked(identity.node, identity.incarnation);
  for (const snapshot::HeldRun& run : held) {
    // The registry read the runs from files that may lie: only those inside one half are held.
    const bool class_run = run.first < class_chunks_ && run.count <= class_chunks_ - run.first;
    const bool large_run = run.first >= class_chunks_ && run.first < chunks_ && run.count <= chunks_ - run.first;
    if (!class_run && !large_run) continue;
    for (std::size_t k = run.first; k < std::size_t{run.first} + run.count; ++k) hold_locked(k);
  }
  g_zone.owners.store(owners, std::memory_order_relaxed);
  g_zone.size.store(c.size, std::memory_order_relaxed);
  g_zone.class_span.store(class_chunks_ * kChunkSize, std::memory_order_relaxed);
  g_zone.base.store(c.base, std::memory_order_release);
  if constexpr (kChecks) install_stale_access_report();
  reserved_.store(true, std::memory_order_release);
}

void ZoneImpl::set_bits(std::uint64_t* bits, std::size_t first, std::size_t count, bool value) noexcept {
  for (std::size_t i = first; i < first + count; ++i) {
    if (value) {
      bits[i / 64] |= std::uint64_t{1} << (i % 64);
    } else {
      bits[i / 64] &= ~(std::uint64_t{1} << (i % 64));
    }
  }
}

namespace {

// The first index in [i, end) that is used (`value`) or not, or `end`. Word at a time. A chunk
// is used if its bit in `used` is set and, when `waiting` is given, not set there, or if it is
// held: a held chunk is used whatever else is true of it.
std::size_t next_with(const std::uint64_t* used, const std::uint64_t* waiting, const std::uint64_t* held,
                      std::size_t i, std::size_t end, bool value) noexcept {
  while (i < end) {
    std::uint64_t word = (used[i / 64] & ~(waiting != nullptr ? waiting[i / 64] : 0)) | held[i / 64];
    if (!value) word = ~word;
    word &= ~std::uint64_t{0} << (i % 64);
    if (word != 0) {
      const std::size_t found = (i / 64) * 64 + static_cast<std::size_t>(std::countr_zero(word));
      return found < end ? found : end;
    }
    i = (i / 64 + 1) * 64;
  }
  return end;
}

}  // namespace

std::size_t ZoneImpl::find_free_run(std::size_t from, std::size_t end, std::size_t count,
                                    bool or_waiting) const noexcept {
  // Alternates between "next free chunk" and "next used chunk after it": each step crosses one
  // region boundary, so a request that cannot be met costs O(regions + words), not O(chunks x
  // count) as a chunk-by-chunk first fit would (a 16 TiB request in a fragmented zone took 11 s
  // that way, all under the zone lock).
  const std::uint64_t* waiting = or_waiting ? quarantined_ : nullptr;
  std::size_t i = from;
  while (true) {
    i = next_with(used_, waiting, held_, i, end, false);
    if (end - i < count) return end;
    const std::size_t used = next_with(used_, waiting, held_, i, i + count, true);
    if (used == i + count) return i;
    i = used;
  }
}

void ZoneImpl::place_locked(std::uint32_t node, std::uint32_t incarnation) noexcept {
  // One slice per node id, eight windows per slice (zone.h, "Slices"). A zone too small for a
  // slice per node (under 64 chunks a half) starts every node at its half's beginning.
  constexpr std::size_t kWindows = 8;
  const std::size_t slice = class_chunks_ / NodeIdentity::kMaxNodes;
  node_ = node;
  for (int h = 0; h < 2; ++h) {
    const std::size_t begin = h == 0 ? 0 : class_chunks_;
    slice_[h][0] = begin + node * slice;
    slice_[h][1] = slice_[h][0] + slice;
    start_[h] = slice_[h][0] + (incarnation % kWindows) * (slice / kWindows);
    start_hint_[h] = start_[h];
  }
}

std::size_t ZoneImpl::find_wrapped(int h, std::size_t count, bool or_waiting) const noexcept {
  const std::size_t begin = h == 0 ? 0 : class_chunks_;
  const std::size_t end = h == 0 ? class_chunks_ : chunks_;
  // Runs are searched by where they start, in four segments that partition the half: the node's
  // slice from the incarnation's window on, the slice before the window, the rest of the half
  // above the slice, then below it. A run may reach past its segment (into the next slice, when
  // no run starting earlier fits). hint_ and start_hint_ bound free chunks only: a search that
  // may take waiting chunks skips nothing.
  const std::size_t low = or_waiting ? begin : std::max(begin, hint_[h]);
  const std::size_t segments[4][2] = {
      {or_waiting ? start_[h] : std::max({start_[h], start_hint_[h], hint_[h]}), slice_[h][1]},
      {std::max(low, slice_[h][0]), start_[h]},
      {std::max(low, slice_[h][1]), end},
      {low, slice_[h][0]},
  };
  for (const auto& [from, to] : segments) {
    if (from >= to) continue;
    const std::size_t limit = std::min(to + count - 1, end);
    const std::size_t i = find_free_run(from, limit, count, or_waiting);
    if (i != limit) return i;
  }
  return end;
}

std::uintptr_t ZoneImpl::acquire(Half half, std::size_t count, HeapId owner,
                                 std::uint64_t* mprotect_calls) noexcept {
  const int h = half == Half::kClass ? 0 : 1;
  const std::size_t end = h == 0 ? class_chunks_ : chunks_;
  std::lock_guard lock(mutex_);
  if (!reserved() || count == 0 || count > end) return 0;
  std::size_t i = find_wrapped(h, count, false);
  if (i == end && waiting_[h] != 0) {
    // No free run, but quarantined chunks could make one: exactly those chunks give way (the
    // others keep guarding their stale pointers); a request they cannot meet evicts nothing.
    i = find_wrapped(h, count, true);
    if (i != end) {
      for (std::size_t k = i; k < i + count; ++k) {
        if (test(quarantined_, k)) {
          unquarantine_locked(k);
          set_bits(used_, k, 1, false);
        }
      }
    }
  }
  if (held_chunks_ != 0) [[unlikely]] {
    if (i == end) {
      if (!held_reported_[h][1]) report_held_locked(h, count, true);
    } else if ((i < slice_[h][0] || i >= slice_[h][1]) && held_in_slice_[h] != 0 && !held_reported_[h][0]) {
      report_held_locked(h, count, false);
    }
  }
  if (i == end) return 0;
  if (!make_accessible_locked(h, i + count, mprotect_calls)) return 0;
  // Only once the chunks are really taken. A run found where a search began means no chunk was
  // free between that hint and the run (and none below hint_ at all).
  if (i == std::max({start_[h], start_hint_[h], hint_[h]})) start_hint_[h] = i + count;
  if (i == hint_[h]) hint_[h] = i + count;
  if (owner == 0) {
    // 31 bits of generation (bit 63 of an id is the tombstone's); 0 is skipped on wrap-around,
    // after 2^31 heaps in one chunk, when ids of that chunk could repeat.
    generation_[i] = (generation_[i] + 1) & 0x7fffffffu;
    if (generation_[i] == 0) generation_[i] = 1;
    owner = make_heap_id(static_cast<std::uint32_t>(i), generation_[i]);
    set_bits(restored_, i, 1, false);
  }
  take_locked(h, i, count, owner);
  return chunk_address(static_cast<std::uint32_t>(i));
}

bool ZoneImpl::acquire_at(std::size_t first, std::size_t count, HeapId owner,
                          std::uint64_t* mprotect_calls) noexcept {
  std::lock_guard lock(mutex_);
  if (!reserved() || count == 0 || first + count > chunks_ || first + count < first) return false;
  const int h = first < class_chunks_ ? 0 : 1;
  if (h == 0 && first + count > class_chunks_) return false;
  // A snapshot needs exactly its own chunks: one that waits in quarantine, or in a thread's heap
  // cache, gives way to it.
  for (std::size_t k = first; k < first + count; ++k) {
    if (test(used_, k) && !test(quarantined_, k) && !cached(k)) return false;
  }
  if (!make_accessible_locked(h, first + count, mprotect_calls)) return false;
  for (std::size_t k = first; k < first + count; ++k) {
    if (cached(k)) {
      // The cached heap's pages are still committed: the snapshot's chunks must read as zero
      // wherever the snapshot does not write them. The thread holding the chunk finds it gone.
      const std::uintptr_t chunk = chunk_address(static_cast<std::uint32_t>(k));
      if (os::discard(chunk, kChunkSize) != 0) {
        fatal("madvise(MADV_DONTNEED) of the cached chunk at %#lx failed", static_cast<unsigned long>(chunk));
      }
      uncache_locked(k);
      set_bits(used_, k, 1, false);
      --in_use_[h];  // take_locked counts it again
    }
    if (test(quarantined_, k)) {
      unquarantine_locked(k);
      set_bits(used_, k, 1, false);
    }
  }
  const std::uint32_t head = first_chunk_of(owner);
  if (head < class_chunks_ && generation_[head] < generation_of(owner)) {
    generation_[head] = generation_of(owner);  // later heaps there get later generations
  }
  if (head >= first && head < first + count) {
    set_bits(restored_, head, 1, true);
    residency_[head] = Residency{};
    taking_[head] = ChunkTaking{};
  }
  take_locked(h, first, count, owner);
  return true;
}

bool ZoneImpl::make_accessible_locked(int h, std::size_t need_end, std::uint64_t* mprotect_calls) noexcept {
  if (need_end <= accessible_end_[h]) return true;
  const std::size_t end = h == 0 ? class_chunks_ : chunks_;
  std::size_t new_end = align_up(need_end, kProtectStep);
  if (new_end > end) new_end = end;
  const std::uintptr_t from = ZoneImpl::chunk_address(static_cast<std::uint32_t>(accessible_end_[h]));
  if (os::make_accessible(from, (new_end - accessible_end_[h]) * kChunkSize) != 0) return false;
  ++*mprotect_calls;
  accessible_end_[h] = new_end;
  return true;
}

void ZoneImpl::take_locked(int h, std::size_t first, std::size_t count, HeapId owner) noexcept {
  set_bits(used_, first, count, true);
  in_use_[h] += count;
  auto* owners = g_zone.owners.load(std::memory_order_relaxed);
  for (std::size_t k = first; k < first + count; ++k) owners[k].store(owner, std::memory_order_relaxed);
}

void ZoneImpl::release(std::uintptr_t first, std::size_t count, HeapId freed_by) noexcept {
  const std::size_t index = (first - config_.base) >> kChunkShift;
  std::lock_guard lock(mutex_);
  release_locked(index, count, freed_by);
}

void ZoneImpl::release_locked(std::size_t index, std::size_t count, HeapId freed_by) noexcept {
  const std::uintptr_t first = chunk_address(static_cast<std::uint32_t>(index));
  auto* owners = g_zone.owners.load(std::memory_order_relaxed);
  for (std::size_t k = index; k < index + count; ++k) {
    owners[k].store(freed_by | kTombstone, std::memory_order_relaxed);
  }
  // The chunks stay marked used while they wait, so that no search hands them out.
  set_bits(quarantined_, index, count, true);
  const std::uint32_t release = ++releases_;
  for (std::size_t k = index; k < index + count; ++k) released_[k] = release;
  quarantined_chunks_ += count;
  waiting_[index < class_chunks_ ? 0 : 1] += count;
  in_use_[index < class_chunks_ ? 0 : 1] -= count;
  if (kChecks && protected_chunks_ + count <= kMaxProtectedChunks &&
      os::make_inaccessible(first, count * kChunkSize) == 0) {
    set_bits(protected_, index, count, true);
    protected_chunks_ += count;
  }
  if (fifo_length_ == chunks_) compact_fifo_locked();
  fifo_[(fifo_head_ + fifo_length_) % chunks_] = {static_cast<std::uint32_t>(index),
                                                 static_cast<std::uint32_t>(count), release};
  ++fifo_length_;
  evict_locked(quarantine_limit_, -1);
}

bool ZoneImpl::restored_here(HeapId id) const noexcept {
  std::lock_guard lock(mutex_);
  const std::uint32_t head = first_chunk_of(id);
  return reserved() && head < chunks_ && test(restored_, head);
}

void ZoneImpl::mark_restored(HeapId id) noexcept {
  std::lock_guard lock(mutex_);
  const std::uint32_t head = first_chunk_of(id);
  if (reserved() && head < chunks_) set_bits(restored_, head, 1, true);
  if (reserved() && head < class_chunks_) {
    residency_[head] = Residency{};
    taking_[head] = ChunkTaking{};
  }
}

bool ZoneImpl::in_half(Half half, std::size_t first, std::size_t count) const noexcept {
  // class_chunks_ and chunks_ are set once, when the zone is reserved.
  const std::size_t begin = half == Half::kClass ? 0 : class_chunks_;
  const std::size_t end = half == Half::kClass ? class_chunks_ : chunks_;
  return reserved() && count != 0 && first >= begin && first < end && count <= end - first;
}

ZoneStats ZoneImpl::stats() const noexcept {
  std::lock_guard lock(mutex_);
  ZoneStats s;
  s.base = config_.base;
  s.size = config_.size;
  s.chunk_size = kChunkSize;
  s.class_chunks_in_use = in_use_[0];
  s.large_chunks_in_use = in_use_[1];
  s.live_heaps = live_heaps_.load(std::memory_order_relaxed);
  s.quarantined_chunks = quarantined_chunks_;
  s.cached_heaps = cached_chunks_;
  s.retained_bytes = retained_.load(std::memory_order_relaxed);
  s.held_chunks = held_chunks_;
  s.class_start_chunk = start_[0];
  s.large_start_chunk = start_[1];
  s.ignored_frees = ignored_frees_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace detail

void Zone::configure(const ZoneConfig& config) { detail::zone().configure(config); }

ZoneConfig Zone::default_config() noexcept {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer only lets programs map [4 GiB, 512 GiB) below its shadow.
  return ZoneConfig{std::uintptr_t{0x10} << 32, std::size_t{448} << 30};
#else
  // 17 TiB: above AddressSanitizer's shadow (which ends below 16.01 TiB) and far below where
  // Linux places PIE executables (~85 TiB) and shared libraries (~127 TiB).
  return ZoneConfig{std::uintptr_t{0x110} << 36, std::size_t{64} << 40};
#endif
}

bool Zone::reserved() noexcept { return detail::zone().reserved(); }

ZoneStats Zone::stats() noexcept { return detail::zone().stats(); }

std::size_t Zone::set_quarantine(std::size_t chunks) noexcept { return detail::zone().set_quarantine(chunks); }

}  // namespace reheap
