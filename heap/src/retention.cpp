// Retention: a live heap keeps the runs of the huge blocks it frees for its next huge blocks, and
// purges their pages on a delay (zone.h, "Retention").
//
// Two parts with different masters. Keeping a run or giving it back changes where later blocks
// go, so it is decided by the heap's own allocations and frees alone (HeapState: retain_limit,
// retained_huge_*, retain_seq; ChunkHeader::retained_seq), and a replay decides the same way.
// Purging a retained run's pages changes nothing but RSS, so it may follow time and other heaps
// (the zone-wide resident bound); what it knows lives in the zone's Residency record, process
// memory that no snapshot or digest reads, and it counts its madvise calls there too.
#include <atomic>

#include "heap_fast.h"
#include "os/memory.h"
#include "report.h"

namespace reheap {
namespace detail {
namespace {

// Few enough that looking for a run to reuse costs nothing next to a block of over 1 MiB.
constexpr std::uint32_t kMaxRetainedRuns = 8;

struct Settings {
  std::atomic<std::size_t> heap_bytes;
  std::atomic<std::size_t> resident_bytes;
  std::atomic<std::uint32_t> purge_delay_ms;
};
// Checked builds start without retention: a freed huge block goes to the quarantine, where a use
// after free is reported.
constinit Settings g_settings{kChecks ? 0 : RetainConfig{}.heap_bytes, RetainConfig{}.resident_bytes,
                              RetainConfig{}.purge_delay_ms};

bool is_retained(const ChunkHeader* c) noexcept {
  return c->kind == ChunkKind::kHuge && c->retained_seq != 0;
}

bool is_resident(const ZoneImpl::Residency& r, const HeapState* h, const ChunkHeader* c) noexcept {
  return r.heap == h->id && c->retained_seq > r.purged_through;
}

// Ends the retention of run `c`: it leaves the retained counts, and the zone's resident bytes if
// its pages were still there. The run stays the heap's, its bytes in `committed`.
void unretain(HeapState* h, ChunkHeader* c) noexcept {
  ZoneImpl& z = zone();
  if (is_resident(z.residency(h->id), h, c)) z.sub_resident(c->huge_size);
  --h->retained_huge_runs;
  h->retained_huge_bytes -= kPageSize + c->huge_size;
  c->retained_seq = 0;
  REHEAP_UNPOISON(c->huge_block, c->huge_size);
}

// Gives retained runs back to the zone, in list order, until the heap keeps at most `keep` bytes.
void give_back_retained(HeapState* h, std::size_t keep) noexcept {
  for (ChunkHeader* c = h->large_head; c != nullptr && h->retained_huge_bytes > keep;) {
    ChunkHeader* next = c->next;
    if (is_retained(c)) {
      unretain(h, c);
      h->committed -= kPageSize + c->huge_size;
      release_huge_run(h, c);
    }
    c = next;
  }
}

// A kept block up to this many times the size asked for is handed out whole (its usable size is
// what it was), so that blocks of changing sizes (a vector's doublings) keep their pages instead
// of discarding a tail one time and faulting it in the next.
constexpr std::size_t kMaxSlack = 4;

// Whether kept run `a` suits a block of `usable` bytes better than `b`: first a block it holds
// with at most kMaxSlack times too much, the smallest; then one to grow, the largest (fewest pages
// to fault in); then one to cut down, the smallest. The most recently kept among equals.
bool better_fit(const ChunkHeader* a, const ChunkHeader* b, std::size_t usable) noexcept {
  const auto rank = [usable](const ChunkHeader* c) {
    if (c->huge_size >= usable && c->huge_size <= kMaxSlack * usable) return 0;
    return c->huge_size < usable ? 1 : 2;
  };
  const int ra = rank(a);
  const int rb = rank(b);
  if (ra != rb) return ra < rb;
  if (a->huge_size != b->huge_size) return ra == 1 ? a->huge_size > b->huge_size : a->huge_size < b->huge_size;
  return a->retained_seq > b->retained_seq;
}

// The heap's Residency record, made its own if it spoke for another heap (or none): then nothing
// of this heap is resident, since runs kept before this process restored the heap hold no pages
// (a snapshot holds no kept block).
ZoneImpl::Residency& own_residency(const HeapState* h) noexcept {
  ZoneImpl::Residency& r = zone().residency(h->id);
  if (r.heap != h->id) r = ZoneImpl::Residency{h->id, h->retain_seq, 0, 0};
  return r;
}

bool purge_due(const ZoneImpl::Residency& r, const HeapState* h, std::uint64_t now) noexcept {
  return r.heap == h->id && r.since_ms != 0 &&
         now - r.since_ms >= g_settings.purge_delay_ms.load(std::memory_order_relaxed);
}

}  // namespace

bool retain_huge(HeapState* h, ChunkHeader* c) noexcept {
  const std::size_t bytes = kPageSize + c->huge_size;
  if (h->retained_huge_runs >= kMaxRetainedRuns || bytes > h->retain_limit ||
      h->retained_huge_bytes > h->retain_limit - bytes || owned_run_chunks(h, c) != c->run_chunks) {
    return false;
  }
  ZoneImpl::Residency& r = own_residency(h);  // before the seq moves: this run is resident
  c->retained_seq = ++h->retain_seq;
  ++h->retained_huge_runs;
  h->retained_huge_bytes += bytes;
  REHEAP_POISON(c->huge_block, c->huge_size);

  ZoneImpl& z = zone();
  const std::uint64_t now = os::coarse_now_ms();
  if (r.since_ms == 0) r.since_ms = now == 0 ? 1 : now;
  const std::size_t resident = z.add_resident(c->huge_size);
  if (resident > g_settings.resident_bytes.load(std::memory_order_relaxed) || purge_due(r, h, now)) {
    purge_retained(h);
  }
  return true;
}

ChunkHeader* take_retained(HeapState* h, std::size_t usable, std::size_t offset, std::size_t chunks,
                           bool* refused) noexcept {
  if (purge_due(zone().residency(h->id), h, os::coarse_now_ms())) purge_retained(h);
  ChunkHeader* best = nullptr;
  for (ChunkHeader* c = h->large_head; c != nullptr; c = c->next) {
    if (!is_retained(c) || c->run_chunks < chunks || c->run_chunks > 2 * chunks ||
        static_cast<std::size_t>(c->huge_block - reinterpret_cast<char*>(c)) != offset) {
      continue;  // too small or too large a run, or not the block's alignment
    }
    if (best == nullptr || better_fit(c, best, usable)) best = c;
  }
  if (best == nullptr) return nullptr;
  unretain(h, best);
  const std::size_t had = best->huge_size;
  if (usable > had) {
    if (!charge(h, usable - had)) {
      h->committed -= kPageSize + had;
      release_huge_run(h, best);
      *refused = true;
      return nullptr;
    }
    best->huge_size = usable;
  } else if (had > kMaxSlack * usable) {
    // Whether the tail is still resident depends on time; the madvise is made either way, so
    // that the heap's own count of OS calls does not.
    if (os::discard(reinterpret_cast<std::uintptr_t>(best->huge_block + usable), had - usable) == 0) {
      ++h->madvise_calls;
    }
    h->committed -= had - usable;
    best->huge_size = usable;
  }
  return best;
}

std::size_t purge_retained(HeapState* h) noexcept {
  ZoneImpl& z = zone();
  ZoneImpl::Residency& r = z.residency(h->id);
  if (r.heap != h->id || r.since_ms == 0) return 0;
  std::size_t bytes = 0;
  for (ChunkHeader* c = h->large_head; c != nullptr && h->retained_huge_runs != 0; c = c->next) {
    if (!is_retained(c) || !is_resident(r, h, c)) continue;
    if (os::discard(reinterpret_cast<std::uintptr_t>(c->huge_block), c->huge_size) != 0) {
      fatal("madvise(MADV_DONTNEED) of heap %llu's retained block at %p failed",
            static_cast<unsigned long long>(h->id), static_cast<void*>(c->huge_block));
    }
    ++r.purge_calls;
    bytes += c->huge_size;
  }
  r.purged_through = h->retain_seq;
  r.since_ms = 0;
  z.sub_resident(bytes);
  return bytes;
}

void forget_retained(HeapState* h) noexcept {
  if (h->retained_huge_runs == 0) return;
  for (ChunkHeader* c = h->large_head; c != nullptr; c = c->next) {
    if (is_retained(c)) unretain(h, c);
  }
}

std::size_t resident_retained_bytes(const HeapState* h) noexcept {
  ZoneImpl::Residency& r = zone().residency(h->id);
  std::size_t bytes = 0;
  if (r.heap != h->id || h->retained_huge_runs == 0) return 0;
  for (const ChunkHeader* c = h->large_head; c != nullptr; c = c->next) {
    if (is_retained(c) && is_resident(r, h, c)) bytes += c->huge_size;
  }
  return bytes;
}

void count_purge_calls(HeapState* h, std::uint64_t calls) noexcept {
  if (calls == 0) return;
  own_residency(h).purge_calls += calls;
}

std::uint64_t purge_calls(const HeapState* h) noexcept {
  const ZoneImpl::Residency& r = zone().residency(h->id);
  return r.heap == h->id ? r.purge_calls : 0;
}

bool give_back_all_retained(HeapState* h) noexcept {
  if (h->retained_huge_runs == 0) return false;
  give_back_retained(h, 0);
  return true;
}

void init_retention(HeapState* h) noexcept {
  h->retain_limit = g_settings.heap_bytes.load(std::memory_order_relaxed);
}

}  // namespace detail

std::size_t Heap::retain_limit() const noexcept { return detail::state(this)->retain_limit; }

void Heap::set_retain_limit(std::size_t bytes) noexcept {
  detail::HeapState* h = detail::state(this);
  h->retain_limit = bytes;
  if (h->retained_huge_bytes > bytes) detail::give_back_retained(h, bytes);
}

std::size_t Heap::purge_retained() noexcept { return detail::purge_retained(detail::state(this)); }

std::size_t Heap::purge_free_runs() noexcept { return detail::purge_free_runs(detail::state(this)); }

RetainConfig Zone::retention() noexcept {
  const detail::Settings& s = detail::g_settings;
  return RetainConfig{s.heap_bytes.load(std::memory_order_relaxed), s.resident_bytes.load(std::memory_order_relaxed),
                      s.purge_delay_ms.load(std::memory_order_relaxed)};
}

RetainConfig Zone::set_retention(const RetainConfig& config) noexcept {
  const RetainConfig before = retention();
  detail::Settings& s = detail::g_settings;
  s.heap_bytes.store(config.heap_bytes, std::memory_order_relaxed);
  s.resident_bytes.store(config.resident_bytes, std::memory_order_relaxed);
  s.purge_delay_ms.store(config.purge_delay_ms, std::memory_order_relaxed);
  return before;
}

std::size_t Zone::retained_resident_bytes() noexcept {
  return detail::zone().reserved() ? detail::zone().retained_resident() : 0;
}

}  // namespace reheap
