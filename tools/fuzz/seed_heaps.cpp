#include "seed_heaps.h"

#include <sys/mman.h>
#include <xxhash.h>

#include <cstring>

#include "reheap/byte_stream.h"
#include "reheap/heap.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"

namespace reheap_fuzz {

namespace {

constexpr std::size_t kHugeBytes = std::size_t{3} << 19;  // 1.5 MiB: one chunk's huge run
constexpr std::size_t kLargeBytes = 40000;                  // a 10-page run

void fill(void* p, std::size_t n, unsigned seed) {
  auto* b = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(i * 13 + seed);
}

// The bystander lives for the whole process: a static pointer, never destroyed, so that no exit
// order question arises (its memory is in the zone, which is never unmapped).
struct Bystander {
  reheap::Heap* heap = nullptr;
  void* blocks[3] = {};
  std::size_t sizes[3] = {};
  std::uint64_t digest = 0;

  std::uint64_t content() const {
    XXH3_state_t* s = XXH3_createState();
    XXH3_64bits_reset(s);
    for (int i = 0; i < 3; ++i) XXH3_64bits_update(s, blocks[i], sizes[i]);
    const std::uint64_t d = XXH3_64bits_digest(s);
    XXH3_freeState(s);
    return d;
  }
};
Bystander* g_bystander = nullptr;

std::vector<std::uint8_t> full_snapshot(reheap::Heap& heap) {
  // A new Snapshotter, so that this full snapshot is its first: a second full save after writes
  // can hold a zero run, which the reader rejects in a full snapshot, and a seed must be valid.
  reheap::Snapshotter snapshotter(heap);
  std::vector<std::uint8_t> out;
  reheap::VectorSink sink(out);
  snapshotter.write(sink);
  return out;
}

}  // namespace

void create_bystander() {
  if (g_bystander != nullptr) return;
  // A placeholder heap takes the chunks the seed heap will have, so that the bystander's land
  // between them (see the header); then it is destroyed and its chunks are free again.
  reheap::HeapPtr placeholder = reheap::Heap::create();
  placeholder->allocate(kLargeBytes);
  auto* b = new Bystander;
  b->heap = reheap::Heap::create().release();
  b->sizes[0] = 64;
  b->blocks[0] = b->heap->allocate(b->sizes[0]);
  b->sizes[1] = kLargeBytes;
  b->blocks[1] = b->heap->allocate(b->sizes[1]);
  placeholder->allocate(kHugeBytes);
  b->sizes[2] = 4096;  // the first page of its huge block: the one a runaway discard hits first
  b->blocks[2] = b->heap->allocate(kHugeBytes);
  placeholder.reset();
  for (int i = 0; i < 3; ++i) fill(b->blocks[i], b->sizes[i], 100 + i);
  b->digest = b->content();
  g_bystander = b;
}

const char* bystander_damage() {
  const Bystander* b = g_bystander;
  if (b == nullptr) return nullptr;
  for (void* p : b->blocks) {
    if (reheap::Heap::owner_of(p) != b->heap) {
      return "a chunk of the bystander heap changed owner (another heap released or took it)";
    }
  }
  if (b->content() != b->digest) {
    return "the bystander heap's blocks changed (another heap discarded or wrote its pages)";
  }
  return nullptr;
}

void scrub_zone() {
  const Bystander* b = g_bystander;
  const reheap::ZoneStats zone = reheap::Zone::stats();
  if (b == nullptr || zone.size == 0) return;
  // The bystander's chunks, in address order (its blocks were made class, large, huge).
  std::uintptr_t keep[3];
  for (int i = 0; i < 3; ++i) {
    keep[i] = zone.base + ((reinterpret_cast<std::uintptr_t>(b->blocks[i]) - zone.base) & ~(zone.chunk_size - 1));
  }
  std::uintptr_t from = zone.base;
  for (std::uintptr_t chunk : keep) {
    if (chunk > from) ::madvise(reinterpret_cast<void*>(from), chunk - from, MADV_DONTNEED);
    from = chunk + zone.chunk_size;
  }
  ::madvise(reinterpret_cast<void*>(from), zone.base + zone.size - from, MADV_DONTNEED);
}

std::vector<Seed> build_seeds() {
  std::vector<Seed> seeds;
  reheap::HeapPtr heap = reheap::Heap::create();
  seeds.push_back({"empty", full_snapshot(*heap)});  // metadata pages only

  Seed rich{"rich", {}};
  for (std::size_t size : {8, 48, 200, 3000, 9000}) fill(heap->allocate(size), size, 1);
  // Free class blocks: lists of several blocks, so that links chain block to block.
  void* small[6];
  for (void*& p : small) fill(p = heap->allocate(48), 48, 2);
  heap->deallocate(small[1]);
  heap->deallocate(small[4]);
  heap->deallocate(small[2]);
  rich.free_head = reinterpret_cast<std::uintptr_t>(small[2]);
  rich.free_next = reinterpret_cast<std::uintptr_t>(small[4]);
  void* medium = heap->allocate(9000);
  fill(medium, 9000, 3);
  heap->deallocate(medium);
  heap->set_root(heap->allocate(64));
  // The first large run opens the first large chunk; the huge block then takes the next free
  // chunk after the bystander's.
  fill(heap->allocate(kLargeBytes), 64, 4);
  auto* huge = static_cast<unsigned char*>(heap->allocate(kHugeBytes));
  huge[12345] = 7;  // a huge block, nearly all holes
  rich.huge_size = kHugeBytes;
  // 1 MiB runs until the first large chunk is full and a second one opens; every other one freed
  // (and two neighbours, which coalesce), so that the bins hold runs. Pages are written only
  // where a free run keeps its links: unwritten pages are zero, holes that cost the file nothing,
  // and a seed must stay well under libFuzzer's -max_len.
  void* runs[66];
  for (void*& p : runs) p = heap->allocate(std::size_t{1} << 20);
  for (std::size_t i = 0; i < 66; i += 8) heap->deallocate(runs[i]);
  heap->deallocate(runs[3]);
  heap->deallocate(runs[4]);
  void* short_runs[5];
  for (void*& p : short_runs) fill(p = heap->allocate(20000), 64, 5);
  heap->deallocate(short_runs[1]);
  heap->deallocate(short_runs[3]);
  // One more 16 KiB block than a class chunk's lanes hold for the class: a second class chunk,
  // and a free block in it.
  void* blocks16k[129];
  for (void*& p : blocks16k) p = heap->allocate(16384);
  heap->deallocate(blocks16k[128]);
  heap->deallocate(blocks16k[5]);

  reheap::Snapshotter snapshotter(*heap);
  {
    reheap::VectorSink sink(rich.bytes);
    snapshotter.write(sink);
  }
  seeds.push_back(rich);

  Seed increment{"increment", {}};
  heap->deallocate(huge);
  fill(heap->allocate(100), 100, 6);
  heap->deallocate(short_runs[0]);
  {
    reheap::VectorSink sink(increment.bytes);
    snapshotter.write_increment(sink, "parent.snap");
  }
  seeds.push_back(increment);

  // A heap with a limit it has run into, and over-aligned blocks (a large run whose misaligned
  // head and tail were given back).
  reheap::HeapPtr limited = reheap::Heap::create(reheap::HeapConfig{std::size_t{1} << 20});
  fill(limited->allocate(5000, 4096), 5000, 7);
  fill(limited->allocate(20000, 65536), 20000, 8);
  limited->allocate(std::size_t{2} << 20);  // refused: over the limit
  limited->set_root(limited->allocate(32));
  seeds.push_back({"limited", full_snapshot(*limited)});
  return seeds;
}

}  // namespace reheap_fuzz
