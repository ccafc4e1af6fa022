// snapshot_fuzz: libFuzzer target for everything that reads a snapshot from untrusted bytes.
//
// Each input goes to SnapshotReader over a MemorySource (header, every run, every run's data) and
// to reheap::restore(MemorySource&) with LayoutCheck::kNone. A SnapshotError is the expected
// outcome for a bad input; anything else that escapes, and any sanitizer report, is a bug. The
// target also checks what the reader promises about the runs it accepts (SNAPSHOT_FORMAT.md,
// "Runs") and aborts with a message when a promise is broken.
//
// Checksums would stop almost every mutation at the header checksum, so the custom mutator
// re-seals most mutants (header checksum, run checksums, trailer counts and digest) after
// libFuzzer's own mutation; the rest stay unsealed so that the checksum checks are fuzzed too.
// The re-sealing follows the layout the library writes: a 16-byte run record, the data, then the
// data's checksum (heap/src/snapshot/reader.cpp).
//
// Seeds: run with REHEAP_FUZZ_WRITE_SEEDS=DIR to write a few valid snapshots made by this very
// binary (same zone and layout) into DIR and exit; tools/fuzz.sh does so before fuzzing.
#include <xxhash.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "reheap/byte_stream.h"
#include "reheap/heap.h"
#include "reheap/snapshot.h"
#include "reheap/snapshot_file.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

// A run may not span more than a chunk; 64 MiB is the chunk size the format specifies.
constexpr std::uint64_t kMaxRunBytes = std::uint64_t{64} << 20;

// REHEAP_FUZZ_VERBOSE=1 prints why each input was rejected (for looking at one input by hand).
const bool verbose = std::getenv("REHEAP_FUZZ_VERBOSE") != nullptr;

void rejected(const char* by, const reheap::SnapshotError& error) {
  if (verbose) std::fprintf(stderr, "%s: %s: %s\n", by, reheap::to_string(error.code()), error.what());
}

[[noreturn]] void broken_promise(const char* what, const reheap::PageRun& run) {
  std::fprintf(stderr, "snapshot_fuzz: the reader accepted a run that %s: address %#llx, %u pages\n",
               what, static_cast<unsigned long long>(run.address), run.pages);
  std::abort();
}

bool listed(const reheap::SnapshotHeader& h, std::uint64_t index) {
  for (const reheap::SnapshotChunk& c : h.chunks) {
    if (c.index == index) return true;
  }
  return false;
}

void read_everything(const std::uint8_t* data, std::size_t size) {
  try {
    reheap::MemorySource source(data, size);
    reheap::SnapshotReader reader(source, "fuzz-input");
    const reheap::SnapshotHeader& h = reader.header();
    std::vector<unsigned char> scratch;
    std::uintptr_t next_free = 0;
    reheap::PageRun run;
    while (reader.next(run)) {
      const std::uint64_t bytes = std::uint64_t{run.pages} * h.page_size;
      if (run.pages == 0) broken_promise("is empty", run);
      if (h.page_size == 0 || run.address % h.page_size != 0) broken_promise("is unaligned", run);
      if (run.address < next_free) broken_promise("overlaps or precedes the previous one", run);
      if (bytes > kMaxRunBytes) broken_promise("is longer than 64 MiB", run);
      if (run.address < h.zone_base || h.chunk_size == 0) broken_promise("is outside the zone", run);
      const std::uint64_t first = (run.address - h.zone_base) / h.chunk_size;
      const std::uint64_t last = (run.address + bytes - 1 - h.zone_base) / h.chunk_size;
      if (first != last || !listed(h, first)) broken_promise("is not inside one listed chunk", run);
      if (run.zero && h.kind == reheap::SnapshotKind::kFull) broken_promise("is a zero run", run);
      next_free = run.address + bytes;
      if (run.zero) continue;
      scratch.resize(bytes);
      reader.read_data(scratch.data());
    }
  } catch (const reheap::SnapshotError& error) {
    rejected("reader", error);  // the expected outcome for a damaged input
  }
}

void try_restore(const std::uint8_t* data, std::size_t size) {
  try {
    reheap::MemorySource source(data, size);
    reheap::RestoreOptions options;
    options.layout = reheap::LayoutCheck::kNone;
    options.limit_bytes = std::size_t{1} << 30;  // a fuzzed header may claim any size
    reheap::HeapPtr heap = reheap::restore(source, options);
    if (verbose) std::fprintf(stderr, "restore: ok, heap %llu\n", static_cast<unsigned long long>(heap->id()));
    // The restored heap must be usable enough to be destroyed (destroy walks its chunk lists).
  } catch (const reheap::SnapshotError& error) {
    rejected("restore", error);
  }
}

std::uint64_t get_u64(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
void put_u64(std::uint8_t* p, std::uint64_t v) { std::memcpy(p, &v, 8); }

// Recomputes every checksum of a mutant so that it gets past them; stops where the structure
// stops making sense (the reader will reject the rest).
void reseal(std::uint8_t* data, std::size_t size) {
  if (size < 16 || std::memcmp(data, "REHEAPSN", 8) != 0) return;
  std::uint32_t header_length;
  std::memcpy(&header_length, data + 12, 4);
  std::size_t pos = 16 + std::size_t{header_length};
  if (pos + 8 > size) return;
  put_u64(data + pos, XXH3_64bits(data, pos));
  XXH3_state_t* digest = XXH3_createState();
  XXH3_64bits_reset(digest);
  XXH3_64bits_update(digest, data + pos, 8);
  pos += 8;
  std::uint64_t runs = 0;
  std::uint64_t pages = 0;
  // The page size is in the msgpack header; the seeds all use 4096.
  constexpr std::uint64_t kPage = 4096;
  while (pos + 24 <= size) {
    const std::uint32_t run_pages = static_cast<std::uint32_t>(get_u64(data + pos + 8));
    const std::uint32_t flags = static_cast<std::uint32_t>(get_u64(data + pos + 8) >> 32);
    if (run_pages == 0) {  // the end record, then the trailer
      XXH3_64bits_update(digest, data + pos, 24);
      pos += 24;
      if (pos + 32 <= size) {
        put_u64(data + pos, runs);
        put_u64(data + pos + 8, pages);
        put_u64(data + pos + 16, XXH3_64bits_digest(digest));
      }
      break;
    }
    const std::uint64_t bytes = (flags & 1) != 0 ? 0 : run_pages * kPage;
    if (pos + 16 + bytes + 8 > size) break;
    if ((flags & 1) == 0) put_u64(data + pos + 16 + bytes, XXH3_64bits(data + pos + 16, bytes));
    XXH3_64bits_update(digest, data + pos, 16);
    XXH3_64bits_update(digest, data + pos + 16 + bytes, 8);
    ++runs;
    pages += (flags & 1) != 0 ? 0 : run_pages;
    pos += 16 + bytes + 8;
  }
  XXH3_freeState(digest);
}

// Valid snapshots of a few small heaps, written by this binary so that zone and layout match.
void write_seeds(const char* dir) {
  std::vector<std::vector<unsigned char>> seeds;
  const auto fill = [](void* p, std::size_t n, unsigned seed) {
    auto* b = static_cast<unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(i * 13 + seed);
  };
  reheap::HeapPtr heap = reheap::Heap::create();
  {
    reheap::Snapshotter snapshotter(*heap);
    seeds.emplace_back();
    reheap::VectorSink empty(seeds.back());
    snapshotter.write(empty);  // an empty heap: metadata pages only
  }
  {
    // A new Snapshotter, so that this full snapshot is its first: a second full save after
    // writes can hold a zero run, which the reader rejects (ReheapSnap.
    // VerifyAcceptsASecondFullSaveAfterWrites), and a seed must be valid.
    reheap::Snapshotter snapshotter(*heap);
    for (std::size_t size : {8, 48, 200, 3000, 9000}) fill(heap->allocate(size), size, 1);
    heap->set_root(heap->allocate(64));
    fill(heap->allocate(40000), 40000, 2);  // a large page run
    auto* huge = static_cast<unsigned char*>(heap->allocate(std::size_t{3} << 19));
    huge[12345] = 7;  // a huge block, nearly all holes
    seeds.emplace_back();
    reheap::VectorSink full(seeds.back());
    snapshotter.write(full);
    heap->deallocate(huge);
    fill(heap->allocate(100), 100, 3);
    seeds.emplace_back();
    reheap::VectorSink increment(seeds.back());
    snapshotter.write_increment(increment, "parent.snap");
  }
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    const std::string path = std::string(dir) + "/seed-" + std::to_string(i) + ".snap";
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(seeds[i].data()),
               static_cast<std::streamsize>(seeds[i].size()));
    std::printf("wrote %s (%zu bytes)\n", path.c_str(), seeds[i].size());
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  if (const char* dir = std::getenv("REHEAP_FUZZ_WRITE_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  size = LLVMFuzzerMutate(data, size, max_size);
  if (seed % 8 != 0) reseal(data, size);
  return size;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  read_everything(data, size);
  try_restore(data, size);
  return 0;
}
