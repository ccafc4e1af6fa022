// snapshot_bench_heap: a 1 GiB heap saved in full, written to a plain sink, restored, and saved
// incrementally after 0.1%, 1% and 10% of its pages were written.
//
// Fairness: the heap is filled with blocks of mixed sizes (64 B .. 64 KiB, and one block in 256
// of 128 KiB .. 4 MiB, which reaches the large and huge classes) whose every byte is pseudo-random
// and non-zero in bulk, so the snapshot cannot skip zero pages the raw baseline has to write. The
// raw baselines move exactly the snapshot file's size. Before each timed write the target file is
// removed and sync(2) flushes what earlier rows left dirty, so no row pays for another's
// writeback. Reads are measured cold (after dropping the page cache, when the kernel lets us) and
// warm (file just read, so in the page cache); the table says which. Every restore is checked
// against a hash of the heap's blocks taken before the save, outside the timed region.
//
// The benchmark never makes the heap current: blocks come from Heap::allocate, and the block
// list, page list and rows live on the system allocator, so they are not part of the snapshot.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "reheap/heap.h"
#include "reheap/snapshot.h"
#include "snapshot_bench.h"

namespace snapbench {
namespace {

constexpr std::size_t kPage = 4096;

struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

struct Block {
  unsigned char* p;
  std::size_t size;
};

std::size_t log_uniform(SplitMix64& rng, double lo, double hi) {
  const double log_size = std::log(lo) + rng.unit() * (std::log(hi) - std::log(lo));
  return static_cast<std::size_t>(std::exp(log_size));
}

// Allocates blocks until their requested sizes add up to `target` bytes, and fills each one.
std::vector<Block> fill_heap(reheap::Heap& heap, std::size_t target) {
  std::vector<Block> blocks;
  SplitMix64 rng{0x5EED};
  std::size_t total = 0;
  while (total < target) {
    const bool big = (rng.next() & 255) == 0;
    const std::size_t size = big ? log_uniform(rng, 128.0 * 1024, 4.0 * kMiB)
                                 : log_uniform(rng, 64.0, 64.0 * 1024);
    auto* p = static_cast<unsigned char*>(heap.allocate(size));
    if (p == nullptr) {
      std::fprintf(stderr, "snapshot_bench: heap.allocate(%zu) failed after %zu bytes\n", size,
                   total);
      std::exit(1);
    }
    std::uint64_t x = rng.next() | 1;
    for (std::size_t i = 0; i + sizeof x <= size; i += sizeof x) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      std::memcpy(p + i, &x, sizeof x);
    }
    for (std::size_t i = size - size % sizeof x; i < size; ++i) p[i] = 0x5A;
    blocks.push_back({p, size});
    total += size;
  }
  return blocks;
}

// A content hash of every block, to check restores. Word-wise multiply-rotate: fast enough to run
// after every restore (about a second per GiB), and order-sensitive across blocks.
std::uint64_t hash_blocks(const std::vector<Block>& blocks) {
  std::uint64_t h = 0x243F6A8885A308D3ull;
  for (const Block& b : blocks) {
    std::size_t i = 0;
    for (; i + 8 <= b.size; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, b.p + i, sizeof w);
      h = (h ^ w) * 0x9E3779B97F4A7C15ull;
      h ^= h >> 29;
    }
    for (; i < b.size; ++i) h = (h ^ b.p[i]) * 0x100000001B3ull;
  }
  return h;
}

// One address inside a live block for every page that live blocks touch: writing a byte there
// dirties exactly that page and never touches allocator metadata.
std::vector<unsigned char*> live_page_addresses(const std::vector<Block>& blocks) {
  std::vector<std::pair<std::uintptr_t, unsigned char*>> pages;
  for (const Block& b : blocks) {
    const auto start = reinterpret_cast<std::uintptr_t>(b.p);
    const std::uintptr_t end = start + b.size;
    for (std::uintptr_t page = start & ~(kPage - 1); page < end; page += kPage) {
      pages.emplace_back(page, b.p + (std::max(page, start) - start));
    }
  }
  std::sort(pages.begin(), pages.end());
  pages.erase(std::unique(pages.begin(), pages.end(),
                          [](const auto& a, const auto& b) { return a.first == b.first; }),
              pages.end());
  std::vector<unsigned char*> out;
  out.reserve(pages.size());
  for (const auto& pg : pages) out.push_back(pg.second);
  return out;
}

// Writes one byte into `count` distinct random pages of `pages` (partial Fisher-Yates).
void dirty_pages(std::vector<unsigned char*>& pages, std::size_t count, SplitMix64& rng) {
  count = std::min(count, pages.size());
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t j = i + rng.next() % (pages.size() - i);
    std::swap(pages[i], pages[j]);
    *pages[i] ^= 0xA5;
  }
}

// Compares the blocks with the hash taken before the save. Also times the hash: a restore that
// mapped pages lazily would look fast and pay later, on first touch, so a hash much slower than
// the one over the original heap (`hash_seconds`) is reported as a warning about the timing.
void check_restored(const char* what, std::uint64_t expected, double hash_seconds,
                    const std::vector<Block>& blocks, Results& results) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t got = hash_blocks(blocks);
  const double s = seconds_since(t0);
  if (got != expected) {
    std::printf("BUG: %s: the restored heap's blocks differ from the saved ones "
                "(hash %016llx, expected %016llx)\n",
                what, static_cast<unsigned long long>(got),
                static_cast<unsigned long long>(expected));
    results.summary(std::string("content_mismatch_") + what, "yes");
  }
  if (s > 1.5 * hash_seconds + 0.05) {
    std::printf("NOTE: %s: reading the restored blocks took %.3f s against %.3f s on the original "
                "heap: the restore may leave work for the first touch, which its time omits\n",
                what, s, hash_seconds);
  }
}

template <class F>
double timed(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return seconds_since(t0);
}

}  // namespace

void run_heap_benchmark(const Options& options, Results& results) {
  const std::string sec = "1 GiB heap";
  const std::uint64_t avail = free_bytes(options.dir);
  if (avail < 3 * kGiB) {
    std::printf("SKIPPED the 1 GiB heap part: %.1f GiB free in %s, it needs 3 GiB\n",
                static_cast<double>(avail) / kGiB, options.dir.c_str());
    results.summary("heap_part", "skipped_low_space");
    return;
  }
  const auto full = options.dir / "heap-full.snap";
  const auto sink_file = options.dir / "heap-sink.snap";
  const auto raw = options.dir / "raw.bin";

  reheap::HeapPtr heap = reheap::Heap::create();
  std::printf("filling the heap with %.0f MiB of blocks...\n",
              static_cast<double>(options.heap_bytes) / kMiB);
  const std::vector<Block> blocks = fill_heap(*heap, options.heap_bytes);
  const reheap::HeapStats st = heap->stats();
  std::printf("heap: %zu blocks, %.1f MiB live, %.1f MiB committed, %zu class chunks, "
              "%zu large chunks, %llu huge blocks\n",
              blocks.size(), static_cast<double>(st.live_bytes) / kMiB,
              static_cast<double>(st.committed_bytes) / kMiB, st.class_chunks, st.large_chunks,
              static_cast<unsigned long long>(st.huge_live_blocks));
  results.summary("heap_committed_bytes", std::to_string(st.committed_bytes));
  std::uint64_t hash0 = 0;
  const double hash_s = timed([&] { hash0 = hash_blocks(blocks); });

  // Full snapshots of the original heap: crash-safe save(), then write() to a plain fd. The file
  // will be about the committed size; priming needs no more precision than that.
  const std::size_t bytes_guess = st.committed_bytes;
  std::vector<double> save_s, sink_s;
  reheap::SnapshotInfo info;
  std::uint64_t sink_calls = 0;
  {
    reheap::Snapshotter snap(*heap);
    results.summary("tracking", '"' + snap.tracking() + '"');
    for (int r = 0; r < options.reps; ++r) {
      remove_file(full);
      prepare_step(options, bytes_guess);
      save_s.push_back(timed([&] { info = snap.save(full); }));
    }
    for (int r = 0; r < options.reps; ++r) {
      remove_file(sink_file);
      prepare_step(options, bytes_guess);
      sink_s.push_back(timed([&] {
        FdSink sink(sink_file);
        snap.write(sink);
        sink.close();
        sink_calls = sink.calls();
      }));
    }
  }
  const std::uint64_t bytes = info.bytes_written;
  if (bytes != bytes_on_disk(full)) {
    std::printf("BUG: SnapshotInfo.bytes_written = %llu but %s has %llu bytes\n",
                static_cast<unsigned long long>(bytes), full.c_str(),
                static_cast<unsigned long long>(bytes_on_disk(full)));
  }
  if (bytes_on_disk(sink_file) != bytes_on_disk(full)) {
    std::printf("NOTE: write(sink) produced %llu bytes, save() %llu\n",
                static_cast<unsigned long long>(bytes_on_disk(sink_file)),
                static_cast<unsigned long long>(bytes_on_disk(full)));
  }
  results.summary("full_snapshot_bytes", std::to_string(bytes));
  results.summary("full_snapshot_pages", std::to_string(info.pages_written));
  {
    Row& row = results.add(sec, "save(path) full, crash-safe (fsync)", bytes);
    row.seconds = save_s;
    row.baseline = "raw write(2) + fsync";
    row.note = fmt("%llu data pages, %llu zero pages skipped",
                   static_cast<unsigned long long>(info.pages_written),
                   static_cast<unsigned long long>(info.zero_pages));
  }
  {
    Row& row = results.add(sec, "write(FdSink) full, no fsync", bytes_on_disk(sink_file));
    row.seconds = sink_s;
    row.baseline = "raw write(2), no fsync";
    row.note = fmt("%llu sink calls, %.0f KiB each on average",
                   static_cast<unsigned long long>(sink_calls),
                   static_cast<double>(bytes_on_disk(sink_file)) / 1024.0 /
                       static_cast<double>(std::max<std::uint64_t>(sink_calls, 1)));
  }
  remove_file(sink_file);

  // The raw baselines, with the same number of bytes from an ordinary resident buffer.
  {
    unsigned char* buffer = map_filled_buffer(bytes, 0xB0FF);
    std::vector<double> w, wf;
    for (int r = 0; r < options.reps; ++r) {
      remove_file(raw);
      prepare_step(options, bytes);
      w.push_back(timed([&] { raw_write_file(raw, buffer, bytes, false); }));
    }
    for (int r = 0; r < options.reps; ++r) {
      remove_file(raw);
      prepare_step(options, bytes);
      wf.push_back(timed([&] { raw_write_file(raw, buffer, bytes, true); }));
    }
    unmap_buffer(buffer, bytes);
    results.add(sec, "raw write(2), no fsync", bytes).seconds = w;
    results.add(sec, "raw write(2) + fsync", bytes).seconds = wf;
  }
  const bool cold = options.cold && drop_page_cache();
  results.summary("page_cache_dropped", cold ? "yes" : "no");
  if (!cold) {
    std::printf("NOTE: %s: cold reads are not measured; every read below hits the page cache\n",
                options.cold ? "cannot write /proc/sys/vm/drop_caches (not root?)"
                             : "--no-cold given");
  }
  if (cold) {
    std::vector<double> rc;
    for (int r = 0; r < options.reps; ++r) {
      drop_page_cache();
      prepare_step(options, bytes);
      rc.push_back(timed([&] { raw_read_file_fresh(raw); }));
    }
    results.add(sec, "raw read(2), cold", bytes).seconds = rc;
  }
  {
    raw_read_file_fresh(raw);  // untimed: makes sure the file is in the page cache
    std::vector<double> rw;
    for (int r = 0; r < options.reps; ++r) {
      prepare_step(options, bytes);
      rw.push_back(timed([&] { raw_read_file_fresh(raw); }));
    }
    results.add(sec, "raw read(2), warm (page cache)", bytes).seconds = rw;
  }
  remove_file(raw);

  // Restores, in the same process: the original heap must be gone first (its chunks are taken).
  heap.reset();
  reheap::HeapPtr restored;
  if (cold) {
    std::vector<double> rc;
    for (int r = 0; r < options.reps; ++r) {
      restored.reset();
      drop_page_cache();
      prepare_step(options, bytes);
      rc.push_back(timed([&] { restored = reheap::restore(full); }));
      check_restored("restore_cold", hash0, hash_s, blocks, results);
    }
    Row& row = results.add(sec, "restore(path), cold", bytes);
    row.seconds = rc;
    row.baseline = "raw read(2), cold";
  }
  {
    restored.reset();
    raw_read_file_fresh(full);  // untimed: page cache warm
    std::vector<double> rw;
    for (int r = 0; r < options.reps; ++r) {
      restored.reset();
      prepare_step(options, bytes);
      rw.push_back(timed([&] { restored = reheap::restore(full); }));
      check_restored("restore_warm", hash0, hash_s, blocks, results);
    }
    Row& row = results.add(sec, "restore(path), warm (page cache)", bytes);
    row.seconds = rw;
    row.baseline = "raw read(2), warm (page cache)";
  }
  remove_file(full);

  // Increments on the restored heap: a full save as the chain's base, then each dirty fraction
  // `reps` times, each increment holding what was written since the one before.
  const std::string isec = "increments";
  std::vector<unsigned char*> pages = live_page_addresses(blocks);
  const std::size_t heap_pages = restored->stats().committed_bytes / kPage;
  std::vector<std::filesystem::path> chain;
  std::uint64_t chain_bytes = 0;
  SplitMix64 rng{0xD1127};
  {
    reheap::Snapshotter snap(*restored);
    chain.push_back(options.dir / "chain-00.snap");
    prepare_step(options, bytes);
    double base_s = timed([&] { info = snap.save(chain.back()); });
    chain_bytes += info.bytes_written;
    {
      Row& row = results.add(isec, "save(path) full, chain base", info.bytes_written);
      row.seconds = {base_s};
      row.baseline = "save(path) full, crash-safe (fsync)";
      row.time_ratio = true;
      row.note = "tracking: " + info.tracking;
    }
    for (const double pct : {0.1, 1.0, 10.0}) {
      const auto count =
          static_cast<std::size_t>(std::llround(static_cast<double>(heap_pages) * pct / 100.0));
      std::vector<double> s;
      std::vector<std::uint64_t> sizes;
      reheap::SnapshotInfo inc;
      for (int r = 0; r < options.reps; ++r) {
        dirty_pages(pages, count, rng);
        chain.push_back(options.dir / fmt("chain-%02zu.snap", chain.size()));
        prepare_step(options, count * kPage);
        s.push_back(timed([&] { inc = snap.save_increment(chain.back()); }));
        sizes.push_back(inc.bytes_written);
        chain_bytes += inc.bytes_written;
        // Each of the `count` pages is distinct and was written after the previous save, so an
        // increment holding fewer data pages has lost tracked writes.
        if (inc.kind == reheap::SnapshotKind::kIncremental && inc.pages_written < count) {
          std::printf("BUG: save_increment wrote %llu data pages after %zu distinct pages were "
                      "written (%s)\n",
                      static_cast<unsigned long long>(inc.pages_written), count,
                      chain.back().c_str());
          results.summary("incr_lost_writes", "yes");
        }
      }
      std::sort(sizes.begin(), sizes.end());
      Row& row = results.add(isec, fmt("save_increment, %g%% pages dirtied", pct),
                             sizes[sizes.size() / 2]);
      row.seconds = s;
      row.baseline = "save(path) full, crash-safe (fsync)";
      row.time_ratio = true;
      const bool fell_back = inc.kind == reheap::SnapshotKind::kFull;
      row.note = fmt("%zu pages dirtied -> %llu data pages, %llu zero pages; %s", count,
                     static_cast<unsigned long long>(inc.pages_written),
                     static_cast<unsigned long long>(inc.zero_pages),
                     fell_back ? ("FULL (fallback: " + inc.fallback_reason + ")").c_str()
                               : "incremental");
      results.summary(fmt("incr_%g_kind", pct), fell_back ? "full_fallback" : "incremental");
      results.summary(fmt("incr_%g_bytes", pct), std::to_string(sizes[sizes.size() / 2]));
    }
  }

  // The whole chain back: restore applies the full snapshot and every increment in order.
  const std::uint64_t hash1 = hash_blocks(blocks);
  restored.reset();
  raw_read_file_fresh(chain.front());  // untimed: the base file is in the page cache as well
  {
    prepare_step(options, chain_bytes);
    const double s = timed([&] { restored = reheap::restore(chain.back()); });
    check_restored("restore_chain", hash1, hash_s, blocks, results);
    Row& row = results.add(isec,
                           fmt("restore(path) of the chain, warm (full + %zu)", chain.size() - 1),
                           chain_bytes);
    row.seconds = {s};
    row.baseline = "restore(path), warm (page cache)";
    row.time_ratio = true;
  }
  restored.reset();
  for (const auto& f : chain) remove_file(f);
}

}  // namespace snapbench
