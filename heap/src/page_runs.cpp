// Page runs: the large (16 KiB .. 1 MiB) and huge (> 1 MiB) allocation classes.
//
// Large blocks are runs of whole pages in the heap's large chunks. Free runs are coalesced with
// their neighbours on free and kept in bins by length (one bin per page count up to 256 pages,
// one for longer runs), with a bitmap of non-empty bins, so finding the smallest adequate run is
// a bit scan rather than the reference design's first-fit walk. New runs are carved from the
// current large chunk's frontier; a run that does not fit there opens a new large chunk (the old
// chunk's unused tail stays untouched address space).
//
// Huge blocks get a dedicated run of chunks: a header page, then the block. Freeing keeps the run
// for the heap's next huge block (retention.cpp) or gives the pages back to the OS and the chunks
// back to the zone.
#include <bit>
#include <cstring>

#include "heap_fast.h"
#include "os/memory.h"
#include "report.h"

namespace reheap::detail {
namespace {

unsigned bin_of(std::size_t pages) noexcept {
  return pages < kNumBins - 1 ? static_cast<unsigned>(pages) : kNumBins - 1;
}

char* page_address(ChunkHeader* c, std::size_t page) noexcept {
  return reinterpret_cast<char*>(c) + page * kPageSize;
}

void mark_free(ChunkHeader* c, std::size_t first, std::size_t pages) noexcept;

void bin_insert(HeapState* h, ChunkHeader* c, std::size_t first, std::size_t pages) noexcept {
  mark_free(c, first, pages);
  auto* run = reinterpret_cast<FreeRun*>(page_address(c, first));
  const unsigned b = bin_of(pages);
  run->prev = nullptr;
  run->purged = 0;
  run->next = h->bins[b];
  if (run->next != nullptr) run->next->prev = run;
  h->bins[b] = run;
  h->bin_mask[b / 64] |= std::uint64_t{1} << (b % 64);
}

void bin_remove(HeapState* h, FreeRun* run, std::size_t pages) noexcept {
  const unsigned b = bin_of(pages);
  if (run->prev != nullptr) {
    run->prev->next = run->next;
  } else {
    h->bins[b] = run->next;
    if (run->next == nullptr) h->bin_mask[b / 64] &= ~(std::uint64_t{1} << (b % 64));
  }
  if (run->next != nullptr) run->next->prev = run->prev;
}

void mark_free(ChunkHeader* c, std::size_t first, std::size_t pages) noexcept {
  std::uint16_t* pt = page_table(c);
  pt[first] = static_cast<std::uint16_t>(pages | kRunHead | kRunFree);
  pt[first + pages - 1] = static_cast<std::uint16_t>(pages | kRunFree | (pages == 1 ? kRunHead : 0));
}

// Changes the length of the free run starting at `first`, keeping its list node (its first page)
// when its bin does not change: the common case for long runs, which is what makes carving from
// and merging into a long run cheap.
void resize_free_run(HeapState* h, ChunkHeader* c, std::size_t first, std::size_t old_pages,
                     std::size_t new_pages) noexcept;

// The carved pages an empty carve chunk keeps committed at most (4 MiB).
constexpr std::uint32_t kCarveChunkKeptPages = kFirstRunPage + 1024;

ChunkHeader* chunk_header_of(const void* p) noexcept {
  return large_header(ZoneImpl::chunk_base(reinterpret_cast<std::uintptr_t>(p)));
}

std::size_t page_index(const ChunkHeader* c, const void* p) noexcept {
  return static_cast<std::size_t>(static_cast<const char*>(p) -
                                  reinterpret_cast<const char*>(c)) >> kPageShift;
}

void resize_free_run(HeapState* h, ChunkHeader* c, std::size_t first, std::size_t old_pages,
                     std::size_t new_pages) noexcept {
  if (bin_of(old_pages) == bin_of(new_pages)) {
    mark_free(c, first, new_pages);
    return;
  }
  bin_remove(h, reinterpret_cast<FreeRun*>(page_address(c, first)), old_pages);
  bin_insert(h, c, first, new_pages);
}

// The smallest free run of at least `pages` pages, or null.
FreeRun* find_run(HeapState* h, std::size_t pages) noexcept {
  for (unsigned b = bin_of(pages); b < kNumBins;) {
    std::uint64_t word = h->bin_mask[b / 64] & (~std::uint64_t{0} << (b % 64));
    if (word == 0) {
      b = (b / 64 + 1) * 64;
      continue;
    }
    b = (b / 64) * 64 + static_cast<unsigned>(std::countr_zero(word));
    if (b >= kNumBins) break;
    if (b < kNumBins - 1) return h->bins[b];
    for (FreeRun* r = h->bins[b]; r != nullptr; r = r->next) {  // long runs: first fit
      ChunkHeader* c = chunk_header_of(r);
      if ((page_table(c)[page_index(c, r)] & kRunLength) >= pages) return r;
    }
    break;
  }
  return nullptr;
}

ChunkHeader* add_large_chunk(HeapState* h, std::size_t chunks, ChunkKind kind) noexcept {
  const std::uintptr_t base = take_chunks(h, Half::kLarge, chunks);
  if (base == 0) {
    ++h->failed;
    return nullptr;
  }
  ChunkHeader* c = large_header(base);
  c->kind = kind;
  c->owner = h->id;
  c->run_chunks = static_cast<std::uint32_t>(chunks);
  c->frontier = kFirstRunPage;
  c->prev = nullptr;
  c->next = h->large_head;
  if (c->next != nullptr) c->next->prev = c;
  h->large_head = c;
  h->large_chunks += static_cast<std::uint32_t>(chunks);
  return c;
}

void unlink_large(HeapState* h, ChunkHeader* c) noexcept {
  if (c->prev != nullptr) c->prev->next = c->next; else h->large_head = c->next;
  if (c->next != nullptr) c->next->prev = c->prev;
  h->large_chunks -= c->run_chunks;
}

void mark_allocated(ChunkHeader* c, std::size_t first, std::size_t pages) noexcept {
  std::uint16_t* pt = page_table(c);
  pt[first] = static_cast<std::uint16_t>(pages | kRunHead);
  if (pages > 1) pt[first + pages - 1] = static_cast<std::uint16_t>(pages);
}

// A run of `pages` pages: from the bins, else carved. Returns its first page, or null.
char* take_run(HeapState* h, std::size_t pages) noexcept {
  if (FreeRun* r = find_run(h, pages)) {
    ChunkHeader* c = chunk_header_of(r);
    const std::size_t first = page_index(c, r);
    const std::size_t have = page_table(c)[first] & kRunLength;
    if (have == pages) {
      bin_remove(h, r, have);
      mark_allocated(c, first, pages);
      return page_address(c, first);
    }
    // Take the run's tail, so that the rest keeps its first page and usually its bin.
    resize_free_run(h, c, first, have, have - pages);
    mark_allocated(c, first + have - pages, pages);
    return page_address(c, first + have - pages);
  }
  ChunkHeader* c = h->large_carve;
  if (c == nullptr || c->frontier + pages > kPagesPerChunk) {
    // Header page and page table are charged up front: an upper bound on what they touch.
    if (!charge(h, kFirstRunPage * kPageSize)) return nullptr;
    c = add_large_chunk(h, 1, ChunkKind::kLarge);
    if (c == nullptr) {
      h->committed -= kFirstRunPage * kPageSize;
      return nullptr;
    }
    h->large_carve = c;
  }
  if (!charge(h, pages * kPageSize)) return nullptr;
  const std::size_t first = c->frontier;
  c->frontier += static_cast<std::uint32_t>(pages);
  mark_allocated(c, first, pages);
  return page_address(c, first);
}

// Frees [first, first+pages) of chunk c, merging with free neighbours.
void release_run(HeapState* h, ChunkHeader* c, std::size_t first, std::size_t pages) noexcept {
  std::uint16_t* pt = page_table(c);
  const std::size_t after = first + pages;
  std::size_t more = 0;
  if (after < c->frontier && (pt[after] & kRunFree)) {
    more = pt[after] & kRunLength;
    bin_remove(h, reinterpret_cast<FreeRun*>(page_address(c, after)), more);
  }
  if (first > kFirstRunPage && (pt[first - 1] & kRunFree)) {
    // Grow the free run before this one over it (and the run after, if free).
    const std::size_t before = pt[first - 1] & kRunLength;
    resize_free_run(h, c, first - before, before, before + pages + more);
    reinterpret_cast<FreeRun*>(page_address(c, first - before))->purged = 0;
    return;
  }
  bin_insert(h, c, first, pages + more);
}

void* alloc_large(HeapState* h, std::size_t size, std::size_t alignment) noexcept {
  const std::size_t pages = align_up(size == 0 ? 1 : size, kPageSize) >> kPageShift;
  const std::size_t slack = alignment > kPageSize ? (alignment >> kPageShift) - 1 : 0;
  char* run = take_run(h, pages + slack);
  if (run == nullptr) return nullptr;
  if (slack != 0) {
    // Over-aligned: give back the pages before the aligned start and after the block.
    ChunkHeader* c = chunk_header_of(run);
    const std::size_t first = page_index(c, run);
    char* aligned = reinterpret_cast<char*>(align_up(reinterpret_cast<std::uintptr_t>(run), alignment));
    const std::size_t head = static_cast<std::size_t>(aligned - run) >> kPageShift;
    const std::size_t tail = slack - head;
    mark_allocated(c, first + head, pages);
    if (head != 0) { mark_allocated(c, first, head); release_run(h, c, first, head); }
    if (tail != 0) {
      mark_allocated(c, first + head + pages, tail);
      release_run(h, c, first + head + pages, tail);
    }
    run = aligned;
  }
  ++h->large_live_blocks;
  h->large_live_pages += pages;
  return run;
}

void* alloc_huge(HeapState* h, std::size_t size, std::size_t alignment) noexcept {
  if (alignment > kMaxAlignment || size > (std::size_t{1} << 46)) {
    ++h->failed;
    return nullptr;
  }
  const std::size_t offset = align_up(kPageSize, alignment < kPageSize ? kPageSize : alignment);
  const std::size_t usable = align_up(size, kPageSize);
  const std::size_t chunks = align_up(offset + usable, kChunkSize) / kChunkSize;
  if (h->retained_huge_runs != 0) {
    bool refused = false;
    if (ChunkHeader* c = take_retained(h, usable, offset, chunks, &refused)) {
      ++h->huge_live_blocks;
      h->huge_live_bytes += c->huge_size;  // up to kMaxSlack times `usable` (retention.cpp)
      return c->huge_block;
    }
    if (refused) return nullptr;
  }
  if (!charge(h, kPageSize + usable)) return nullptr;
  ChunkHeader* c = add_large_chunk(h, chunks, ChunkKind::kHuge);
  if (c == nullptr) {
    h->committed -= kPageSize + usable;
    return nullptr;
  }
  c->huge_block = reinterpret_cast<char*>(c) + offset;
  c->huge_size = usable;
  ++h->huge_live_blocks;
  h->huge_live_bytes += usable;
  return c->huge_block;
}

// The large chunk and first page of the live large block p, or null (reported) if p is not one.
ChunkHeader* live_large(HeapState* h, const void* p, std::size_t* first) noexcept {
  ChunkHeader* c = chunk_header_of(p);
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (c->kind == ChunkKind::kHuge) {
    if (p != c->huge_block) {
      report_misuse(Misuse::kNeverHandedOut, p, h->id, h->id);
      return nullptr;
    }
    if (c->retained_seq != 0) {  // freed, and kept for reuse (retention.cpp)
      report_misuse(Misuse::kDoubleFree, p, h->id, h->id);
      return nullptr;
    }
    return c;
  }
  if (p == h->held_run) {  // freed, and held for the next run of its length
    report_misuse(Misuse::kDoubleFree, p, h->id, h->id);
    return nullptr;
  }
  const std::size_t page = page_index(c, p);
  const bool valid = c->kind == ChunkKind::kLarge && a % kPageSize == 0 &&
                     page >= kFirstRunPage && page < c->frontier &&
                     (page_table(c)[page] & kRunHead);
  if (!valid) {
    report_misuse(Misuse::kNeverHandedOut, p, h->id, h->id);
    return nullptr;
  }
  if (page_table(c)[page] & kRunFree) {
    report_misuse(Misuse::kDoubleFree, p, h->id, h->id);
    return nullptr;
  }
  *first = page;
  return c;
}

// True if all of the large chunk's carved pages are one free run.
bool is_empty(ChunkHeader* c) noexcept {
  const std::uint16_t head = page_table(c)[kFirstRunPage];
  return c->frontier > kFirstRunPage && (head & kRunFree) &&
         (head & kRunLength) == c->frontier - kFirstRunPage;
}

// Gives a large chunk none of whose runs is live back to the zone, so that its memory serves
// other heaps (the chunk runs are carved from stays: keeping one spares an madvise and a fault
// per page for a heap that frees and allocates around an empty chunk).
void give_back_large_chunk(HeapState* h, ChunkHeader* c) noexcept {
  bin_remove(h, reinterpret_cast<FreeRun*>(page_address(c, kFirstRunPage)), c->frontier - kFirstRunPage);
  unlink_large(h, c);
  h->committed -= std::size_t{c->frontier} * kPageSize;
  if (ChunkObserver* o = zone().observer(h->id)) o->chunks_released(reinterpret_cast<std::uintptr_t>(c), 1);
  release_chunk_pages(h, c, false);  // c is zero from here on
  zone().release(reinterpret_cast<std::uintptr_t>(c), 1, h->id);
}

[[gnu::noinline]] void* alloc_pages_slow(HeapState* h, std::size_t size, std::size_t alignment) noexcept {
  if (size <= kMaxLargeSize && alignment <= kMaxLargeSize) return alloc_large(h, size, alignment);
  return alloc_huge(h, size, alignment);
}

}  // namespace

// The held run (HeapState::held_run) first, in a function small enough to cost no register
// spills: a buffer freed and allocated again at one size, over and over, never reaches the bins.
void* alloc_pages(HeapState* h, std::size_t size, std::size_t alignment) noexcept {
  const std::size_t pages = align_up(size == 0 ? 1 : size, kPageSize) >> kPageShift;
  if (pages == h->held_run_pages && alignment <= kPageSize) {
    char* const run = h->held_run;
    h->held_run = nullptr;
    h->held_run_pages = 0;
    ++h->large_live_blocks;
    h->large_live_pages += pages;
    return run;
  }
  return alloc_pages_slow(h, size, alignment);
}

std::size_t owned_run_chunks(const HeapState* h, const ChunkHeader* c) noexcept {
  if (c->kind != ChunkKind::kHuge) return 1;
  const auto base = reinterpret_cast<std::uintptr_t>(c);
  std::size_t n = 1;  // the header's own chunk is the heap's: the heap reached it from its list
  while (n < c->run_chunks && ZoneImpl::contains(base + n * kChunkSize) &&
         ZoneImpl::owner_of(base + n * kChunkSize) == h->id) {
    ++n;
  }
  return n;
}

void release_chunk_pages(HeapState* h, ChunkHeader* c, bool is_class) noexcept {
  const std::uintptr_t base = chunk_of(c, is_class);
  const std::size_t run_bytes = owned_run_chunks(h, c) * kChunkSize;
  std::size_t bytes = run_bytes;
  if (c->kind == ChunkKind::kLarge) bytes = std::size_t{c->frontier} * kPageSize;
  if (c->kind == ChunkKind::kHuge) {
    bytes = static_cast<std::size_t>(c->huge_block - reinterpret_cast<char*>(c)) + c->huge_size;
  }
  // The header's fields say what to discard, and they are the heap's own data: never let them
  // reach past the chunks the heap owns, whatever they say.
  if (bytes > run_bytes) bytes = run_bytes;
  if (os::discard(base, bytes) != 0) {
    fatal("madvise(MADV_DONTNEED) of heap %llu's chunk at %#lx failed",
          static_cast<unsigned long long>(h->id), static_cast<unsigned long>(base));
  }
  ++h->madvise_calls;
}

void release_huge_run(HeapState* h, ChunkHeader* c) noexcept {
  unlink_large(h, c);
  const std::size_t chunks = owned_run_chunks(h, c);
  if (ChunkObserver* o = zone().observer(h->id)) o->chunks_released(reinterpret_cast<std::uintptr_t>(c), chunks);
  release_chunk_pages(h, c, false);  // c is zero from here on
  zone().release(reinterpret_cast<std::uintptr_t>(c), chunks, h->id);
}

namespace {

// Frees the run [first, first + pages) of large chunk c, and gives back what that empties.
[[gnu::noinline]] void free_run(HeapState* h, ChunkHeader* c, std::size_t first, std::size_t pages) noexcept {
  release_run(h, c, first, pages);
  if (c != h->large_carve) {
    if (is_empty(c)) give_back_large_chunk(h, c);
  } else if (c->frontier > kCarveChunkKeptPages && is_empty(c)) {
    // A burst emptied the chunk runs are carved from: its pages go back, and carving starts
    // again from its first page. Below the bound they stay, so that a block allocated and freed
    // over and over in an otherwise empty heap costs no madvise and no fault.
    reset_empty_carve_chunk(h);
  }
}

[[gnu::noinline]] void free_pages_slow(HeapState* h, void* p) noexcept {
  std::size_t first = 0;
  ChunkHeader* c = live_large(h, p, &first);
  if (c == nullptr) return;
  if (c->kind == ChunkKind::kHuge) {
    --h->huge_live_blocks;
    h->huge_live_bytes -= c->huge_size;
    if (retain_huge(h, c)) return;
    h->committed -= kPageSize + c->huge_size;
    release_huge_run(h, c);
    return;
  }
  // live_large found no misuse, so free_pages would have taken a large run itself.
  const std::size_t pages = page_table(c)[first] & kRunLength;
  --h->large_live_blocks;
  h->large_live_pages -= pages;
  free_run(h, c, first, pages);
}

}  // namespace

// A live large run is freed after the checks live_large makes. One of at most kHeldRunMaxPages
// pages becomes the held run, and the run held before is freed for real instead. Huge blocks and
// misuse take the slow path.
void free_pages(HeapState* h, void* p) noexcept {
  ChunkHeader* c = chunk_header_of(p);
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (c->kind == ChunkKind::kLarge && a % kPageSize == 0 && p != h->held_run) {
    std::size_t page = page_index(c, p);
    if (page >= kFirstRunPage && page < c->frontier) {
      const std::uint16_t entry = page_table(c)[page];
      std::size_t pages = entry & kRunLength;
      if ((entry & (kRunHead | kRunFree)) == kRunHead) {
        --h->large_live_blocks;
        h->large_live_pages -= pages;
        if (pages <= kHeldRunMaxPages) {
          char* const previous = h->held_run;
          const std::size_t previous_pages = h->held_run_pages;
          h->held_run = static_cast<char*>(p);
          h->held_run_pages = pages;
          if (previous == nullptr) return;
          c = chunk_header_of(previous);
          page = page_index(c, previous);
          pages = previous_pages;
        }
        free_run(h, c, page, pages);
        return;
      }
    }
  }
  free_pages_slow(h, p);
}

void release_held_run(HeapState* h) noexcept {
  char* const run = h->held_run;
  if (run == nullptr) return;
  h->held_run = nullptr;
  h->held_run_pages = 0;
  ChunkHeader* c = chunk_header_of(run);
  const std::size_t first = page_index(c, run);
  free_run(h, c, first, page_table(c)[first] & kRunLength);
}

void reset_empty_carve_chunk(HeapState* h) noexcept {
  ChunkHeader* c = h->large_carve;
  if (c == nullptr || c->frontier == kFirstRunPage || !is_empty(c)) return;
  const std::size_t pages = c->frontier - kFirstRunPage;
  bin_remove(h, reinterpret_cast<FreeRun*>(page_address(c, kFirstRunPage)), pages);
  if (os::discard(reinterpret_cast<std::uintptr_t>(page_address(c, kFirstRunPage)), pages * kPageSize) == 0) {
    ++h->madvise_calls;
  }
  c->frontier = kFirstRunPage;  // page-table entries past the frontier are never read
  h->committed -= pages * kPageSize;
}

std::size_t purge_free_runs(HeapState* h) noexcept {
  release_held_run(h);
  std::size_t bytes = 0;
  std::uint64_t calls = 0;
  for (unsigned b = 2; b < kNumBins; ++b) {  // a run of one page is all links
    for (FreeRun* r = h->bins[b]; r != nullptr; r = r->next) {
      if (r->purged != 0) continue;
      ChunkHeader* c = chunk_header_of(r);
      const std::size_t rest = (page_table(c)[page_index(c, r)] & kRunLength) - 1;
      if (os::discard(reinterpret_cast<std::uintptr_t>(r) + kPageSize, rest * kPageSize) != 0) {
        fatal("madvise(MADV_DONTNEED) of heap %llu's free pages at %p failed",
              static_cast<unsigned long long>(h->id), static_cast<void*>(r));
      }
      r->purged = 1;
      ++calls;
      bytes += rest * kPageSize;
    }
  }
  count_purge_calls(h, calls);
  return bytes;
}

std::size_t free_run_pages(const HeapState* h) noexcept {
  std::size_t pages = 0;
  pages += h->held_run_pages;
  for (unsigned b = 0; b < kNumBins; ++b) {
    for (FreeRun* r = h->bins[b]; r != nullptr; r = r->next) {
      ChunkHeader* c = chunk_header_of(r);
      pages += page_table(c)[page_index(c, r)] & kRunLength;
    }
  }
  return pages;
}

std::size_t page_block_size(const HeapState* h, const void* p) noexcept {
  std::size_t first = 0;
  ChunkHeader* c = live_large(const_cast<HeapState*>(h), p, &first);
  if (c == nullptr) return 0;
  if (c->kind == ChunkKind::kHuge) return c->huge_size;
  return (page_table(c)[first] & kRunLength) * kPageSize;
}

void* realloc_pages(HeapState* h, void* p, std::size_t new_size) noexcept {
  std::size_t first = 0;
  ChunkHeader* c = live_large(h, p, &first);
  if (c == nullptr) return nullptr;
  const std::size_t want = align_up(new_size == 0 ? 1 : new_size, kPageSize);
  if (c->kind == ChunkKind::kHuge) {
    const std::size_t capacity = c->run_chunks * kChunkSize -
                                 static_cast<std::size_t>(c->huge_block - reinterpret_cast<char*>(c));
    if (want > c->huge_size) {
      if (want > capacity || !charge(h, want - c->huge_size, Charge::kAttempt)) return nullptr;
    } else if (want < c->huge_size) {
      if (os::discard(reinterpret_cast<std::uintptr_t>(c->huge_block + want), c->huge_size - want) == 0) {
        ++h->madvise_calls;
      }
      h->committed -= c->huge_size - want;
    }
    h->huge_live_bytes += want;
    h->huge_live_bytes -= c->huge_size;
    c->huge_size = want;
    return p;
  }
  if (new_size > kMaxLargeSize) return nullptr;
  std::uint16_t* pt = page_table(c);
  const std::size_t have = pt[first] & kRunLength;
  const std::size_t need = want >> kPageShift;
  if (need < have) {
    mark_allocated(c, first, need);
    mark_allocated(c, first + need, have - need);
    release_run(h, c, first + need, have - need);
  } else if (need > have) {
    const std::size_t after = first + have;
    if (after == c->frontier) {
      // The block ends at the carving frontier: take never-used pages after it.
      if (first + need > kPagesPerChunk ||
          !charge(h, (need - have) * kPageSize, Charge::kAttempt)) {
        return nullptr;
      }
      c->frontier = static_cast<std::uint32_t>(first + need);
    } else {
      // The held run (freed last) is free for this purpose: it joins its free neighbours first.
      if (h->held_run == page_address(c, after)) release_held_run(h);
      if (!(pt[after] & kRunFree)) return nullptr;
      const std::size_t more = pt[after] & kRunLength;
      if (have + more < need) return nullptr;
      bin_remove(h, reinterpret_cast<FreeRun*>(page_address(c, after)), more);
      if (have + more > need) bin_insert(h, c, first + need, have + more - need);
    }
    mark_allocated(c, first, need);
  }
  h->large_live_pages += need;
  h->large_live_pages -= have;
  return p;
}

}  // namespace reheap::detail
