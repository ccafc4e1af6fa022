// The allocator benchmark: one program, linked once per allocator (see allocator_variant.h).
//
// Two workloads, both reaching the allocator through ::operator new and the sized
// ::operator delete only:
//   hot        for each fixed size, a loop of p = new(size); escape(p); delete(p, size): the cost
//              of one allocate+free pair when everything it touches is in the L1 cache.
//   live-<N>   the replay of a trace (alloc_trace.h) of log-uniform sizes (8 B .. 1 MiB) and
//              Pareto lifetimes whose live data averages N bytes. In the timed steps each block
//              gets one 8-byte word written at its start and one at its end when allocated; both
//              are read back and checked before it is freed, so every block is touched, but not
//              memset.
// Memory is measured on the untimed warm-up of the live workloads, which also writes one word in
// every page of each block: a program writes the memory it asks for, and a block that is only
// touched at its two ends would leave most of a large block's pages unfaulted, so RSS would say
// nothing about how much memory the allocator really needs for the live data.
// A pair is one allocation plus its free. Each result is one line "RESULT key=value ...", for
// tools/bench/alloc_bench.sh to collect; run `alloc_bench_<name> --help` for the options.
//
// `--harness` replaces the allocator by a no-op function that always returns the same buffer, and
// so measures what the loops themselves cost (decoding the trace, the slot table, the touches):
// the load generator must be far cheaper than the thing it loads.
#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "alloc_trace.h"
#include "allocator_variant.h"
#include "bench_clock.h"
#include "process_memory.h"

namespace bench {
namespace {

// ---- the two ways of allocating --------------------------------------------------------------

struct GlobalNew {
  static void* allocate(std::size_t size) { return ::operator new(size); }
  static void deallocate(void* p, std::size_t size) noexcept { ::operator delete(p, size); }
};

// The harness alone: a call that returns the same buffer every time and a call that does nothing.
// The asm statements keep the compiler from proving either call free of effects and removing it.
struct NullAllocator {
  alignas(64) static inline char scratch[(1u << 20) + 64];
  [[gnu::noinline]] static void* allocate(std::size_t) {
    void* p = scratch;
    asm volatile("" : "+r"(p));
    return p;
  }
  [[gnu::noinline]] static void deallocate(void* p, std::size_t) noexcept { escape(p); }
};

// ---- hot loop --------------------------------------------------------------------------------

template <class Allocator>
[[gnu::noinline]] void hot_loop(std::size_t size, std::uint64_t iterations) {
  for (std::uint64_t i = 0; i < iterations; ++i) {
    void* p = Allocator::allocate(size);
    escape(p);
    Allocator::deallocate(p, size);
  }
}

}  // namespace
}  // namespace bench

// Named without C++ mangling so that `valgrind --tool=callgrind
// --toggle-collect=alloc_bench_callgrind_loop` collects exactly the pairs and nothing else.
extern "C" [[gnu::noinline]] void alloc_bench_callgrind_loop(std::size_t size,
                                                             std::uint64_t iterations,
                                                             bool harness) {
  if (harness) {
    bench::hot_loop<bench::NullAllocator>(size, iterations);
  } else {
    bench::hot_loop<bench::GlobalNew>(size, iterations);
  }
}

namespace bench {
namespace {

// ---- trace replay ----------------------------------------------------------------------------

// The values written into a block: distinct per (slot, size), so a block handed out twice, or
// overwritten by its neighbour, fails the check when it is freed.
inline std::uint64_t head_token(std::uint32_t slot, std::uint32_t size) noexcept {
  return ((static_cast<std::uint64_t>(slot) << 32) | size) * 0x9E3779B97F4A7C15u;
}
constexpr std::size_t kPageBytes = 4096;

// The last whole 8-byte word of the block; for blocks under 16 bytes it is the head word itself,
// and then the tail token (token ^ offset) equals the head token.
inline std::size_t tail_offset(std::uint32_t size) noexcept { return (size - 8u) & ~std::size_t{7}; }

// Replays [begin, end). With kTouchPages, every page of a new block gets a word written, not
// only the first and the last.
template <class Allocator, bool kTouchPages>
[[gnu::noinline]] std::uint64_t replay(const Event* begin, const Event* end, void** slots) {
  std::uint64_t mismatches = 0;
  for (const Event* e = begin; e != end; ++e) {
    const std::uint32_t slot = e->slot;
    const std::uint32_t size = e->word & kSizeMask;
    const std::uint64_t head = head_token(slot, size);
    const std::size_t tail_at = tail_offset(size);
    const std::uint64_t tail = head ^ tail_at;
    if (e->word & kFreeBit) {
      auto* p = static_cast<char*>(slots[slot]);
      std::uint64_t seen_head = 0;
      std::uint64_t seen_tail = 0;
      std::memcpy(&seen_head, p, 8);
      std::memcpy(&seen_tail, p + tail_at, 8);
      mismatches += static_cast<std::uint64_t>(seen_head != head) |
                    static_cast<std::uint64_t>(seen_tail != tail);
      Allocator::deallocate(p, size);
      slots[slot] = nullptr;
    } else {
      auto* p = static_cast<char*>(Allocator::allocate(size));
      if constexpr (kTouchPages) {
        for (std::size_t at = kPageBytes; at < tail_at; at += kPageBytes) std::memcpy(p + at, &head, 8);
      }
      std::memcpy(p + tail_at, &tail, 8);
      std::memcpy(p, &head, 8);
      slots[slot] = p;
    }
  }
  return mismatches;
}

// ---- options ---------------------------------------------------------------------------------

struct LiveWorkload {
  const char* name;
  std::size_t target_live_bytes;
  std::size_t timed_steps;
};

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::array<LiveWorkload, 3> kLiveWorkloads = {{
    {"live-4M", 4 * kMiB, 4'000'000},
    {"live-128M", 128 * kMiB, 3'000'000},
    {"live-1.3G", 1331 * kMiB, 2'000'000},  // 1.3 GiB
}};

constexpr std::array<std::size_t, 11> kHotSizes = {8,   16,   32,   64,    128,  256,
                                                   512, 1024, 4096, 16384, 65536};

struct Options {
  std::vector<std::string> workloads;
  std::vector<std::size_t> sizes{kHotSizes.begin(), kHotSizes.end()};
  std::uint64_t seed = 42;
  std::size_t pairs = 0;          // 0: each live workload's default
  double pareto_shape = 1.3;
  unsigned reps = 7;
  unsigned rep_ms = 20;
  std::uint64_t callgrind_iterations = 100'000;
  bool harness = false;
  bool callgrind = false;
  bool machine = false;
  bool verify_only = false;
};

[[noreturn]] void usage(int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: alloc_bench_<allocator> [options]\n"
               "  --workload LIST  comma-separated: hot, live-4M, live-128M, live-1.3G, all "
               "(default all)\n"
               "  --seed N         seed of the live workloads' trace (default 42)\n"
               "  --pairs N        timed allocations per live workload (default: 4M, 3M, 2M)\n"
               "  --shape X        Pareto shape of the lifetimes (default 1.3)\n"
               "  --sizes LIST     hot-loop sizes in bytes (default 8,16,...,65536)\n"
               "  --reps N         hot loop: repetitions per size, median reported (default 7)\n"
               "  --rep-ms N       hot loop: target length of one repetition (default 20)\n"
               "  --harness        replace the allocator by a no-op: the harness's own cost\n"
               "  --callgrind      hot loop only, --iters pairs per size, in\n"
               "                   alloc_bench_callgrind_loop (for valgrind --tool=callgrind)\n"
               "  --iters N        pairs per size in --callgrind mode (default 100000)\n"
               "  --machine        print the TSC rate and build, then exit\n"
               "  --verify         check the allocator is the intended one, then exit\n");
  std::exit(status);
}

std::vector<std::string> split(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    out.emplace_back(list.substr(0, comma));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

std::uint64_t parse_number(const char* text, const char* option) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0') {
    std::fprintf(stderr, "alloc_bench: %s wants a number, got '%s'\n", option, text);
    usage(2);
  }
  return value;
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "alloc_bench: %s needs a value\n", argv[i]);
        usage(2);
      }
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      usage(0);
    } else if (arg == "--workload") {
      for (auto& w : split(value())) o.workloads.push_back(w);
    } else if (arg == "--seed") {
      o.seed = parse_number(value(), "--seed");
    } else if (arg == "--pairs") {
      o.pairs = parse_number(value(), "--pairs");
    } else if (arg == "--shape") {
      o.pareto_shape = std::strtod(value(), nullptr);
      if (!(o.pareto_shape > 1.0)) {
        std::fprintf(stderr, "alloc_bench: --shape must be > 1\n");
        usage(2);
      }
    } else if (arg == "--sizes") {
      o.sizes.clear();
      for (auto& s : split(value())) o.sizes.push_back(parse_number(s.c_str(), "--sizes"));
    } else if (arg == "--reps") {
      o.reps = static_cast<unsigned>(std::clamp<std::uint64_t>(parse_number(value(), "--reps"), 1, 64));
    } else if (arg == "--rep-ms") {
      o.rep_ms = static_cast<unsigned>(std::max<std::uint64_t>(parse_number(value(), "--rep-ms"), 1));
    } else if (arg == "--iters") {
      o.callgrind_iterations = parse_number(value(), "--iters");
    } else if (arg == "--harness") {
      o.harness = true;
    } else if (arg == "--callgrind") {
      o.callgrind = true;
    } else if (arg == "--machine") {
      o.machine = true;
    } else if (arg == "--verify") {
      o.verify_only = true;
    } else {
      std::fprintf(stderr, "alloc_bench: unknown option '%s'\n", argv[i]);
      usage(2);
    }
  }
  if (o.workloads.empty() || std::find(o.workloads.begin(), o.workloads.end(), "all") != o.workloads.end()) {
    o.workloads = {"hot"};
    for (const auto& w : kLiveWorkloads) o.workloads.emplace_back(w.name);
  }
  for (const std::size_t s : o.sizes) {
    if (s == 0 || s > (std::size_t{1} << 30)) {
      std::fprintf(stderr, "alloc_bench: hot-loop size %zu out of range\n", s);
      usage(2);
    }
  }
  return o;
}

const char* allocator_label(const Options& o) { return o.harness ? "harness" : variant_name(); }

double mib(std::size_t bytes) { return static_cast<double>(bytes) / static_cast<double>(kMiB); }

// ---- hot-loop workload -----------------------------------------------------------------------

template <class Allocator>
void run_hot_sizes(const Options& o) {
  const char* label = allocator_label(o);
  for (const std::size_t size : o.sizes) {
    // Calibration doubles as the warm-up: it runs the loop until one repetition lasts about
    // rep_ms, so the allocator's caches and the branch predictors are trained before timing.
    std::uint64_t iterations = 1024;
    const std::uint64_t target_ns = std::uint64_t{o.rep_ms} * 1'000'000u;
    for (;;) {
      const Stopwatch sw;
      hot_loop<Allocator>(size, iterations);
      const std::uint64_t ns = std::max<std::uint64_t>(sw.elapsed().ns, 1);
      if (ns >= target_ns / 4 || iterations >= (std::uint64_t{1} << 34)) {
        iterations = std::max<std::uint64_t>(
            1, static_cast<std::uint64_t>(static_cast<double>(iterations) *
                                          static_cast<double>(target_ns) / static_cast<double>(ns)));
        break;
      }
      iterations *= 4;
    }
    std::array<double, 64> cycles{};
    std::array<double, 64> nanos{};
    for (unsigned r = 0; r < o.reps; ++r) {
      const Stopwatch sw;
      hot_loop<Allocator>(size, iterations);
      const auto span = sw.elapsed();
      cycles[r] = static_cast<double>(span.tsc) / static_cast<double>(iterations);
      nanos[r] = static_cast<double>(span.ns) / static_cast<double>(iterations);
    }
    std::sort(cycles.begin(), cycles.begin() + o.reps);
    std::sort(nanos.begin(), nanos.begin() + o.reps);
    const double median_cycles = cycles[o.reps / 2];
    const double median_ns = nanos[o.reps / 2];
    std::printf("RESULT kind=hot workload=hot-%zu alloc=%s size=%zu iters=%" PRIu64
                " reps=%u cycles_per_pair=%.3f cycles_min=%.3f cycles_max=%.3f ns_per_pair=%.4f"
                " mops_per_s=%.3f\n",
                size, label, size, iterations, o.reps, median_cycles, cycles[0],
                cycles[o.reps - 1], median_ns, 2e3 / median_ns);
    std::fflush(stdout);
  }
}

void hot_body(void* ctx) {
  const Options& o = *static_cast<Options*>(ctx);
  // The first tens of milliseconds of a process run measurably slower on virtual machines (the
  // host brings the vCPU up to speed); spin through them before measuring anything.
  (void)estimate_tsc_hz(250);
  if (o.harness) {
    run_hot_sizes<NullAllocator>(o);
  } else {
    run_hot_sizes<GlobalNew>(o);
  }
}

void callgrind_body(void* ctx) {
  const Options& o = *static_cast<Options*>(ctx);
  for (const std::size_t size : o.sizes) {
    // One untimed round first, outside the collected function, so the counts are of warm pairs.
    if (o.harness) {
      hot_loop<NullAllocator>(size, 1000);
    } else {
      hot_loop<GlobalNew>(size, 1000);
    }
    alloc_bench_callgrind_loop(size, o.callgrind_iterations, o.harness);
    std::printf("CALLGRIND alloc=%s size=%zu iters=%" PRIu64 "\n", allocator_label(o), size,
                o.callgrind_iterations);
  }
}

// ---- live workloads --------------------------------------------------------------------------

struct LiveRun {
  const Options* options;
  const Trace* trace;
  void** slots;
  std::uint64_t mismatches = 0;
  Stopwatch::Span span{};
  std::size_t warmup_peak_rss = 0;  // VmHWM at the end of the warm-up
  std::size_t peak_rss = 0;         // VmHWM at the end of the timed steps
};

template <class Allocator>
void run_live_replay(LiveRun& run) {
  const Trace& t = *run.trace;
  const Event* events = t.events.data();
  // The warm-up brings the allocator to the steady state, its memory to its working size and
  // every page of that memory into RSS.
  run.mismatches += replay<Allocator, true>(events, events + t.first_timed_event, run.slots);
  run.warmup_peak_rss = peak_rss_bytes();
  const Stopwatch sw;
  run.mismatches +=
      replay<Allocator, false>(events + t.first_timed_event, events + t.num_events, run.slots);
  run.span = sw.elapsed();
  run.peak_rss = peak_rss_bytes();
  // Free what is still live, untimed, checking it like the replay does.
  for (std::uint32_t slot = 0; slot < t.num_slots; ++slot) {
    if (run.slots[slot] == nullptr) continue;
    const Event last_free{slot, t.slot_sizes[slot] | kFreeBit};
    run.mismatches += replay<Allocator, false>(&last_free, &last_free + 1, run.slots);
  }
}

void live_body(void* ctx) {
  auto& run = *static_cast<LiveRun*>(ctx);
  if (run.options->harness) {
    run_live_replay<NullAllocator>(run);
  } else {
    run_live_replay<GlobalNew>(run);
  }
}

void run_live(const Options& o, const LiveWorkload& w) {
  TraceParams params;
  params.seed = o.seed;
  params.target_live_bytes = w.target_live_bytes;
  params.timed_steps = o.pairs != 0 ? o.pairs : w.timed_steps;
  params.pareto_shape = o.pareto_shape;
  const Stopwatch build_clock;
  const Trace trace = build_trace(params);
  const double build_s = static_cast<double>(build_clock.elapsed().ns) * 1e-9;

  // The slot table is touched now, so that it is part of the baseline and not of the peak.
  MmapArray<void*> slots(trace.num_slots);
  for (std::uint32_t i = 0; i < trace.num_slots; ++i) slots[i] = nullptr;

  const bool reset = reset_peak_rss();
  const std::size_t baseline_rss = current_rss_bytes();

  LiveRun run{&o, &trace, slots.data()};
  if (o.harness) {
    live_body(&run);
  } else {
    run_with_allocator(live_body, &run);
  }
  if (run.mismatches != 0 && !o.harness) {
    std::fprintf(stderr, "alloc_bench_%s: %" PRIu64 " blocks failed the write/read check in %s\n",
                 variant_name(), run.mismatches, w.name);
    std::abort();
  }

  const std::size_t timed_events = trace.num_events - trace.first_timed_event;
  const double pairs = static_cast<double>(timed_events) / 2.0;
  const double ns_per_pair = static_cast<double>(run.span.ns) / pairs;
  const double cycles_per_pair = static_cast<double>(run.span.tsc) / pairs;
  const double ops_per_s = static_cast<double>(timed_events) * 1e9 / static_cast<double>(run.span.ns);
  auto growth = [&](std::size_t peak) { return peak > baseline_rss ? peak - baseline_rss : 0; };
  const std::size_t footprint = growth(run.warmup_peak_rss);
  const double overhead_pct =
      (static_cast<double>(footprint) / static_cast<double>(trace.warmup_peak_live_bytes) - 1.0) *
      100.0;
  std::printf("RESULT kind=live workload=%s alloc=%s seed=%" PRIu64
              " shape=%.2f timed_allocs=%zu timed_frees=%zu pairs=%.0f ns_per_pair=%.3f"
              " cycles_per_pair=%.2f mops_per_s=%.3f footprint_mb=%.1f warmup_peak_live_mb=%.1f"
              " overhead_pct=%.1f run_peak_mb=%.1f peak_live_mb=%.1f mean_live_mb=%.1f"
              " baseline_rss_mb=%.1f rss_reset=%d warmup_steps=%zu lifetime_scale=%.1f"
              " lifetime_cap=%zu peak_live_blocks=%zu mean_size=%.0f build_s=%.2f trace=%016" PRIx64
              "\n",
              w.name, allocator_label(o), o.seed, o.pareto_shape, trace.timed_allocs,
              trace.timed_frees, pairs, ns_per_pair, cycles_per_pair, ops_per_s * 1e-6,
              mib(footprint), mib(trace.warmup_peak_live_bytes), overhead_pct,
              mib(growth(run.peak_rss)), mib(trace.peak_live_bytes),
              trace.mean_live_bytes / static_cast<double>(kMiB), mib(baseline_rss), reset ? 1 : 0,
              trace.warmup_steps, trace.lifetime_scale, trace.lifetime_cap_steps,
              trace.peak_live_blocks, trace.mean_size, build_s, trace.checksum);
  std::fflush(stdout);
}

void print_machine() {
  std::printf("MACHINE tsc_mhz=%.1f compiler=\"%s\" cxx_std=%ld\n", estimate_tsc_hz(300) * 1e-6,
              __VERSION__, static_cast<long>(__cplusplus));
}

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
  using namespace bench;
  Options o = parse_options(argc, argv);
  if (o.machine) {
    print_machine();
    return 0;
  }
  if (!o.harness) {
    const std::string description = variant_verify();
    std::printf("INFO alloc=%s version=\"%s\" operator_new_from=%s malloc_from=%s\n",
                variant_name(), description.c_str(), symbol_origin("_Znwm").c_str(),
                symbol_origin("malloc").c_str());
    std::fflush(stdout);
  }
  if (o.verify_only) return 0;

  if (o.callgrind) {
    if (o.harness) {
      callgrind_body(&o);
    } else {
      run_with_allocator(callgrind_body, &o);
    }
    return 0;
  }
  for (const std::string& name : o.workloads) {
    if (name == "hot") {
      if (o.harness) {
        hot_body(&o);
      } else {
        run_with_allocator(hot_body, &o);
      }
      continue;
    }
    const auto* w = std::find_if(kLiveWorkloads.begin(), kLiveWorkloads.end(),
                                 [&](const LiveWorkload& l) { return name == l.name; });
    if (w == kLiveWorkloads.end()) {
      std::fprintf(stderr, "alloc_bench: unknown workload '%s'\n", name.c_str());
      usage(2);
    }
    run_live(o, *w);
  }
  return 0;
}
