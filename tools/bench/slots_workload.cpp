// The slot-table benchmark: the workload of the alloc-test harness that iibmalloc, the per-(Re)Actor
// allocator of seed 002, was measured with (its "randomPos_RandomSize" test, one thread), written
// from that description. One program, linked once per allocator (see allocator_variant.h).
//
// A table of N slots lives outside the allocator (mmap). Each step picks a slot at a uniformly
// random position: an occupied slot has its block checked (one word read back) and freed; an
// empty one gets a new block of a random size, whose first word is written. So about half the
// slots are occupied and the live data hovers around N/2 times the mean size. Sizes are spread as
// p ~ 1/size from 8 B to 64 KiB (every power of two equally likely, uniform within it; mean about
// 7.6 KB, 15% of the blocks above 16 KiB). Workloads:
//   hot    16 slots: every block stays in L1, the allocator's hot pair under a random size mix
//   1.5M   420 slots       (~1.5 MiB live)
//   79M    22,000 slots    (~79 MiB live)
//   1.24G  350,000 slots   (~1.24 GiB live)
// The untimed warm-up runs 8 N steps (at least 1M), writing one word in every page of each new
// block, so that peak RSS growth measures the memory the allocator needs; then `--steps` steps
// are timed. One step is one allocation or one free ("op"). Each result is one line
// "RESULT key=value ...", which tools/bench/slots_bench.sh collects.
#include <sys/mman.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <string_view>

#include "allocator_variant.h"
#include "bench_clock.h"
#include "process_memory.h"

namespace bench {
namespace {

struct SlotWorkload {
  const char* name;
  std::size_t slots;
};
constexpr std::array<SlotWorkload, 4> kWorkloads{{
    {"hot", 16}, {"1.5M", 420}, {"79M", 22'000}, {"1.24G", 350'000}}};

struct Slot {
  std::uint64_t* block;
  std::uint64_t size;
};

// SplitMix64: the same sequence for every allocator.
struct Random {
  std::uint64_t state;
  std::uint64_t next() noexcept {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
  }
};

// 8 B .. 64 KiB: the power of two 2^3 .. 2^15 uniformly, then uniform up to the next one.
std::size_t random_size(std::uint64_t r) noexcept {
  const unsigned e = 3 + static_cast<unsigned>((r >> 40) % 13);
  return (std::size_t{1} << e) + (r & ((std::uint64_t{1} << e) - 1));
}

std::size_t random_slot(std::uint64_t r, std::size_t n) noexcept {
  return static_cast<std::size_t>(((r & 0xffffffffu) * n) >> 32);
}

struct Run {
  const SlotWorkload* w;
  std::uint64_t seed;
  std::uint64_t steps;
  Slot* table;
  std::size_t live_bytes = 0;
  std::size_t live_blocks = 0;
  std::uint64_t checksum = 0;
};

// One step; `touch_pages`: write a word in every page of a new block (the warm-up only).
template <bool touch_pages>
[[gnu::always_inline]] inline void step(Run& run, Random& rng) {
  const std::uint64_t r = rng.next();
  Slot& s = run.table[random_slot(r, run.w->slots)];
  if (s.block != nullptr) {
    if (s.block[0] != s.size) std::abort();  // the block was overwritten: the allocator is broken
    run.checksum += s.size;
    ::operator delete(s.block, s.size);
    s.block = nullptr;
    run.live_bytes -= s.size;
    --run.live_blocks;
    return;
  }
  const std::size_t size = random_size(rng.next());
  auto* p = static_cast<std::uint64_t*>(::operator new(size));
  p[0] = size;
  if constexpr (touch_pages) {
    for (std::size_t at = 4096; at + 8 <= size; at += 4096) p[at / 8] = at;
  }
  s = {p, size};
  run.live_bytes += size;
  ++run.live_blocks;
}

[[gnu::noinline]] void timed_steps(Run& run, Random& rng, std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) step<false>(run, rng);
}

void body(void* ctx) {
  Run& run = *static_cast<Run*>(ctx);
  const std::size_t table_bytes = run.w->slots * sizeof(Slot);
  void* table = mmap(nullptr, table_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (table == MAP_FAILED) std::abort();
  std::memset(table, 0, table_bytes);
  run.table = static_cast<Slot*>(table);
  Random rng{run.seed};

  const bool rss_reset = reset_peak_rss();
  const std::size_t rss0 = current_rss_bytes();
  std::uint64_t warmup = 8 * run.w->slots;
  if (warmup < 1'000'000) warmup = 1'000'000;
  std::size_t peak_live = 0;
  for (std::uint64_t i = 0; i < warmup; ++i) {
    step<true>(run, rng);
    if (run.live_bytes > peak_live) peak_live = run.live_bytes;
  }
  const std::size_t footprint = peak_rss_bytes() - rss0;
  const std::size_t live_after_warmup = run.live_bytes;

  const Stopwatch sw;
  timed_steps(run, rng, run.steps);
  const Stopwatch::Span span = sw.elapsed();

  for (std::size_t i = 0; i < run.w->slots; ++i) {
    if (run.table[i].block != nullptr) ::operator delete(run.table[i].block, run.table[i].size);
  }
  munmap(table, table_bytes);
  const double mib = 1024.0 * 1024.0;
  std::printf("RESULT kind=slots workload=%s alloc=%s slots=%zu seed=%llu steps=%llu "
              "ns_per_op=%.3f cycles_per_op=%.2f mops_per_s=%.3f live_mb=%.2f peak_live_mb=%.2f "
              "footprint_mb=%.1f overhead_pct=%.1f rss_reset=%d checksum=%llx\n",
              run.w->name, variant_name(), run.w->slots, static_cast<unsigned long long>(run.seed),
              static_cast<unsigned long long>(run.steps),
              static_cast<double>(span.ns) / static_cast<double>(run.steps),
              static_cast<double>(span.tsc) / static_cast<double>(run.steps),
              static_cast<double>(run.steps) * 1e3 / static_cast<double>(span.ns),
              static_cast<double>(live_after_warmup) / mib, static_cast<double>(peak_live) / mib,
              static_cast<double>(footprint) / mib,
              (static_cast<double>(footprint) / static_cast<double>(peak_live) - 1) * 100,
              rss_reset ? 1 : 0, static_cast<unsigned long long>(run.checksum));
  std::fflush(stdout);
}

[[noreturn]] void usage(int code) {
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: slots_bench_<allocator> [--workload hot|1.5M|79M|1.24G] [--steps N] "
               "[--seed N] [--verify]\n"
               "  --steps N   timed steps (allocations or frees), default 4000000\n"
               "  --verify    check the allocator is the intended one, then exit\n");
  std::exit(code);
}

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
  using namespace bench;
  std::string_view workload = "79M";
  std::uint64_t steps = 4'000'000;
  std::uint64_t seed = 42;
  bool verify_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--verify") {
      verify_only = true;
    } else if ((a == "--workload" || a == "--steps" || a == "--seed") && i + 1 < argc) {
      const char* v = argv[++i];
      if (a == "--workload") workload = v;
      if (a == "--steps") steps = std::strtoull(v, nullptr, 10);
      if (a == "--seed") seed = std::strtoull(v, nullptr, 10);
    } else {
      usage(a == "--help" || a == "-h" ? 0 : 2);
    }
  }
  const std::string description = variant_verify();
  if (verify_only) {
    std::printf("INFO alloc=%s version=\"%s\"\n", variant_name(), description.c_str());
    return 0;
  }
  for (const SlotWorkload& w : kWorkloads) {
    if (workload != w.name) continue;
    Run run{&w, seed, steps == 0 ? 1 : steps, nullptr};
    run_with_allocator(body, &run);
    return 0;
  }
  std::fprintf(stderr, "slots_bench: unknown workload '%.*s'\n", static_cast<int>(workload.size()),
               workload.data());
  usage(2);
}
