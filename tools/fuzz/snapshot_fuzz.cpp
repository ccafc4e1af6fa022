// snapshot_fuzz: libFuzzer target for everything that reads a snapshot from untrusted bytes.
//
// Each input goes to SnapshotReader over a MemorySource (header, every run, every run's data), one
// in four to read_snapshot_bytes too (from a file in /dev/shm: the reader's seeking path, which
// skips the data of the runs it does not need), and each to reheap::restore(MemorySource&) with
// LayoutCheck::kNone. A SnapshotError is the expected
// outcome for a bad input; anything else that escapes, and any sanitizer report, is a bug. A heap
// that restore accepts must then keep the promises a heap makes (checked below, "oracles"): it is
// within the restore limit, it hands out blocks it owns that do not overlap, it can be used and
// destroyed, and neither restoring nor destroying it changes anything outside it: the zone holds
// as many chunks as before, and the bystander heap (seed_heaps.h) is intact.
//
// Mutation is structure-aware (snapshot_mutator.h): most mutants are files whose checksums are
// right and whose allocator state lies. Every input is recorded with the mutation that made it
// in a black box (black_box.h), so that even a crash no handler survives leaves its input.
//
// Modes, chosen by environment variables (tools/fuzz.sh uses them all):
//   REHEAP_FUZZ_WRITE_SEEDS=DIR        write the seed snapshots into DIR and exit
//   REHEAP_FUZZ_WRITE_REGRESSIONS=DIR  write the hostile inputs (hostile_inputs.h) into DIR, exit
//   REHEAP_FUZZ_BLACKBOX_DIR=DIR       record each input in DIR/blackbox-<pid>.bin while it runs
//   REHEAP_FUZZ_EXTRACT=DIR            with REHEAP_FUZZ_BLACKBOX_DIR: save the input each dead
//                                      process was running into DIR, print where, and exit
//   REHEAP_FUZZ_VERBOSE=1              say why each input was rejected and what made it
#include <dirent.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "black_box.h"
#include "header_fields.h"
#include "hostile_inputs.h"
#include "reheap/byte_stream.h"
#include "reheap/heap.h"
#include "reheap/snapshot.h"
#include "reheap/snapshot_file.h"
#include "reheap/zone.h"
#include "seed_heaps.h"
#include "snapshot_mutator.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

// A run may not span more than a chunk; 64 MiB is the chunk size the format specifies.
constexpr std::uint64_t kMaxRunBytes = std::uint64_t{64} << 20;
// A fuzzed header may claim any size; restore must refuse what is above this.
constexpr std::size_t kRestoreLimit = std::size_t{1} << 30;

const bool verbose = std::getenv("REHEAP_FUZZ_VERBOSE") != nullptr;

void rejected(const char* by, const reheap::SnapshotError& error) {
  if (verbose) std::fprintf(stderr, "%s: %s: %s\n", by, reheap::to_string(error.code()), error.what());
}

[[noreturn]] void broken_promise(const char* what, const reheap::PageRun& run) {
  std::fprintf(stderr, "snapshot_fuzz: the reader accepted a run that %s: address %#llx, %u pages\n",
               what, static_cast<unsigned long long>(run.address), run.pages);
  std::abort();
}

[[noreturn, gnu::format(printf, 1, 2)]] void violated(const char* format, ...) {
  std::fprintf(stderr, "snapshot_fuzz: ");
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fprintf(stderr, "\n");
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

// read_snapshot_bytes over the input written to a file: the heap state's page of its first chunk
// (what Replay::open reads of an extra snapshot), and a range the input's hash picks across the
// zone. Bytes outside every listed chunk must read as zero; the file is not a chain, so a parent
// it names is looked for beside it and not found, or found to be another file. One input in four
// (by its hash): the file costs two thirds of the fuzzer's speed when every input writes it.
void read_bytes_of_file(const std::uint8_t* data, std::size_t size) {
  if (XXH3_64bits(data, size) % 4 != 0) return;
  static const std::string path = "/dev/shm/reheap-fuzz-" + std::to_string(::getpid()) + ".snap";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  reheap::SnapshotHeader h;
  try {
    reheap::MemorySource source(data, size);
    h = reheap::SnapshotReader(source, "fuzz-input").header();
  } catch (const reheap::SnapshotError&) {
    return;  // read_everything has said why; the seeking path starts with the same header
  }
  const std::uint64_t hash = XXH3_64bits(data, size);
  const std::uintptr_t first_chunk = h.zone_base + (std::uintptr_t{h.heap_id & 0xffffffffu} - 1) * h.chunk_size;
  const std::uintptr_t anywhere = h.zone_base + (hash % (std::uint64_t{1} << 40)) / h.page_size * h.page_size;
  const struct {
    std::uintptr_t address;
    std::size_t size;
  } ranges[] = {{first_chunk + reheap_fuzz::Geometry::kHeaderLane * reheap_fuzz::Geometry::kLaneSize, 4096},
                {anywhere, 3 * 4096 + hash % 4096}};
  std::vector<unsigned char> bytes;
  for (const auto& r : ranges) {
    bytes.assign(r.size, 0xEE);
    try {
      reheap::read_snapshot_bytes(path, r.address, bytes.data(), r.size);
    } catch (const reheap::SnapshotError& error) {
      rejected("read_snapshot_bytes", error);
      continue;
    }
    for (std::size_t i = 0; i < r.size; ++i) {
      const std::uintptr_t a = r.address + i;
      const bool in_chunk = a >= h.zone_base && h.chunk_size != 0 && listed(h, (a - h.zone_base) / h.chunk_size);
      if (!in_chunk && bytes[i] != 0) {
        violated("read_snapshot_bytes gave byte %#x at %#llx, outside every listed chunk", bytes[i],
                 static_cast<unsigned long long>(a));
      }
    }
  }
}

// Uses a restored heap the way a program would, checking each promise heap.h makes: a block is
// the heap's own, at least as large as asked, and overlaps no other live block. Lies that
// restore let through (a free list into metadata, a cursor past its lane) show up here.
void use_heap(reheap::Heap& heap) {
  const reheap::HeapStats stats = heap.stats();
  if (stats.committed_bytes > kRestoreLimit) {
    violated("restore accepted a heap with %zu committed bytes, over the restore limit of %zu",
             stats.committed_bytes, kRestoreLimit);
  }
  static constexpr std::size_t kSizes[] = {8, 8, 48, 48, 200, 3000, 9000, 16384, 40000, 40000, 300000,
                                           (std::size_t{3} << 19) + 1};
  struct Block {
    char* p;
    std::size_t size;
  };
  Block blocks[std::size(kSizes)];
  std::size_t n = 0;
  for (std::size_t size : kSizes) {
    void* block = heap.allocate(size);
    if (block == nullptr) continue;  // a limit or an exhausted zone: allowed
    auto* p = static_cast<char*>(block);
    if (!heap.owns(p)) violated("the restored heap handed out %p (%zu bytes), which it does not own", block, size);
    if (heap.usable_size(p) < size) {
      violated("the restored heap handed out %p with %zu usable bytes for %zu", block, heap.usable_size(p), size);
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (p < blocks[i].p + blocks[i].size && blocks[i].p < p + size) {
        violated("the restored heap handed out %p (%zu bytes), overlapping its live block %p (%zu bytes)", block, size,
                 static_cast<void*>(blocks[i].p), blocks[i].size);
      }
    }
    // Write the whole block (huge ones at both ends, to keep the page faults few): a block that
    // is really the heap's metadata or another heap's memory is then damaged where it shows.
    if (size <= 65536) {
      std::memset(p, 0xA5, size);
    } else {
      std::memset(p, 0xA5, 4096);
      std::memset(p + size - 4096, 0xA5, 4096);
    }
    blocks[n++] = {p, size};
  }
  while (n > 0) heap.deallocate(blocks[--n].p);
}

struct ZoneCounts {
  std::size_t class_chunks, large_chunks, heaps;
  bool operator==(const ZoneCounts&) const = default;
};
ZoneCounts zone_counts() {
  const reheap::ZoneStats z = reheap::Zone::stats();
  return {z.class_chunks_in_use, z.large_chunks_in_use, z.live_heaps};
}
ZoneCounts g_baseline{};  // with the bystander, between inputs

void try_restore(const std::uint8_t* data, std::size_t size) {
  bool restored = false;
  try {
    reheap::MemorySource source(data, size);
    reheap::RestoreOptions options;
    options.layout = reheap::LayoutCheck::kNone;
    options.limit_bytes = kRestoreLimit;
    reheap_fuzz::black_box_stage("restore");
    reheap::HeapPtr heap = reheap::restore(source, options);
    restored = true;
    if (verbose) std::fprintf(stderr, "restore: ok, heap %llu\n", static_cast<unsigned long long>(heap->id()));
    reheap_fuzz::black_box_stage("using the restored heap");
    use_heap(*heap);
    reheap_fuzz::black_box_stage("destroying the restored heap");
    heap.reset();
  } catch (const reheap::SnapshotError& error) {
    rejected("restore", error);
  }
  reheap_fuzz::black_box_stage("checking the zone and the bystander");
  const ZoneCounts now = zone_counts();
  if (!(now == g_baseline)) {
    violated("after the input the zone has %zu class chunks, %zu large chunks and %zu heaps in use; before it, "
             "%zu, %zu and %zu (a restore or a destroy leaked or released chunks it did not own)",
             now.class_chunks, now.large_chunks, now.heaps, g_baseline.class_chunks, g_baseline.large_chunks,
             g_baseline.heaps);
  }
  if (const char* damage = reheap_fuzz::bystander_damage()) violated("%s", damage);
  // A failed restore wrote only inside the chunks it took and discarded them itself.
  if (restored) reheap_fuzz::scrub_zone();
}

// The mutation that made the input libFuzzer runs next: libFuzzer runs each mutant right after
// the custom mutator returns it, so a matching hash identifies it.
struct LastMutant {
  std::uint64_t hash = 0;
  std::string description;
};
LastMutant g_last_mutant;

void write_file(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "snapshot_fuzz: cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

void write_seeds(const std::string& dir) {
  const std::vector<reheap_fuzz::Seed> seeds = reheap_fuzz::build_seeds();
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    const std::string path = dir + "/seed-" + std::to_string(i) + "-" + seeds[i].name + ".snap";
    write_file(path, seeds[i].bytes);
    std::printf("wrote %s (%zu bytes)\n", path.c_str(), seeds[i].bytes.size());
  }
}

void write_regressions(const std::string& dir) {
  for (const reheap_fuzz::HostileInput& input : reheap_fuzz::build_hostile_inputs(reheap_fuzz::build_seeds())) {
    const std::string path = dir + "/" + input.name + ".snap";
    write_file(path, input.bytes);
    std::printf("wrote %s: %s\n", path.c_str(), input.lie.c_str());
  }
}

// For each black box left by a process that died while running an input: saves the input into
// `artifacts` (or names libFuzzer's identical artefact) and prints "path<TAB>stage<TAB>made by".
void extract(const std::string& artifacts) {
  const char* boxes = std::getenv("REHEAP_FUZZ_BLACKBOX_DIR");
  DIR* dir = boxes != nullptr ? ::opendir(boxes) : nullptr;
  if (dir == nullptr) return;
  std::vector<std::string> files;
  while (const dirent* e = ::readdir(dir)) {
    if (std::strncmp(e->d_name, "blackbox-", 9) == 0) files.push_back(std::string(boxes) + "/" + e->d_name);
  }
  ::closedir(dir);
  for (const std::string& file : files) {
    reheap_fuzz::RecordedInput input;
    const bool died = reheap_fuzz::read_black_box(file, input);
    std::remove(file.c_str());
    if (!died) continue;
    char name[64];
    std::snprintf(name, sizeof name, "crash-blackbox-%016llx",
                  static_cast<unsigned long long>(XXH3_64bits(input.bytes.data(), input.bytes.size())));
    std::string path = artifacts + "/" + name;
    if (DIR* a = ::opendir(artifacts.c_str())) {  // libFuzzer may have saved the same input
      while (const dirent* e = ::readdir(a)) {
        if (e->d_type != DT_REG) continue;
        const std::string other = artifacts + "/" + e->d_name;
        std::ifstream in(other, std::ios::binary);
        const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        if (bytes == input.bytes) path = other;
      }
      ::closedir(a);
    }
    write_file(path, input.bytes);
    std::printf("%s\t%s\t%s%s\n", path.c_str(), input.stage.c_str(), input.made_by.c_str(),
                input.truncated ? " (input truncated)" : "");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // Before anything else, in every mode: seeds, hostile inputs and fuzzing all need the same
  // chunk placement (seed_heaps.h).
  reheap_fuzz::create_bystander();
  g_baseline = zone_counts();
  try {
    if (const char* dir = std::getenv("REHEAP_FUZZ_WRITE_SEEDS")) {
      write_seeds(dir);
      std::exit(0);
    }
    if (const char* dir = std::getenv("REHEAP_FUZZ_WRITE_REGRESSIONS")) {
      write_regressions(dir);
      std::exit(0);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "snapshot_fuzz: %s\n", e.what());
    std::exit(1);
  }
  if (const char* dir = std::getenv("REHEAP_FUZZ_EXTRACT")) {
    extract(dir);
    std::exit(0);
  }
  std::vector<std::vector<std::uint8_t>> restart;
  for (reheap_fuzz::Seed& seed : reheap_fuzz::build_seeds()) restart.push_back(std::move(seed.bytes));
  reheap_fuzz::set_restart_points(std::move(restart));
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  // libFuzzer mutates a mutant again (up to -mutate_depth times) before going back to the
  // corpus, so an input's history is the chain of edits since its corpus unit.
  std::string history;
  if (XXH3_64bits(data, size) == g_last_mutant.hash) history = std::move(g_last_mutant.description);
  std::string description;
  size = reheap_fuzz::mutate_snapshot(data, size, max_size, seed, LLVMFuzzerMutate, description);
  if (!history.empty()) description = history + " | then " + description;
  g_last_mutant.description = std::move(description);
  g_last_mutant.hash = XXH3_64bits(data, size);
  return size;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const bool mutant = !g_last_mutant.description.empty() && XXH3_64bits(data, size) == g_last_mutant.hash;
  const char* made_by = mutant ? g_last_mutant.description.c_str() : "not a fresh mutant: a seed, a corpus input or a file";
  if (verbose) std::fprintf(stderr, "input (%zu bytes): %s\n", size, made_by);
  reheap_fuzz::black_box_begin(data, size, made_by);
  reheap_fuzz::black_box_stage("reader");
  read_everything(data, size);
  reheap_fuzz::black_box_stage("read_snapshot_bytes");
  read_bytes_of_file(data, size);
  try_restore(data, size);
  reheap_fuzz::black_box_end();
  return 0;
}
