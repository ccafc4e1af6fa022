// The message allocator benchmark: the runtime's traffic pattern, linked once per allocator
// (message_variant.h).
//
// Two threads, each pinned to a CPU of its own, pass messages through bounded SPSC rings
// (spsc_ring.h), in batches, the way reactors on two threads would:
//   spsc-<sizes>      a producer allocates each message, writes its 16-byte header and pushes
//                     it; the consumer pops it, reads and checks the header, and frees it. Every
//                     block is freed by the thread that did not allocate it.
//   pingpong-<sizes>  thread A sends messages to B (at most kWindow in flight); B frees each and
//                     answers with a message of its own, which A frees: both threads allocate
//                     and both free, always what the other allocated.
// <sizes> is "64" (every message 64 bytes) or "mixed" (log-uniform from 16 to 1024 bytes, from
// a table drawn with a fixed seed before anything is timed).
//
// A pass moves --messages messages (pingpong: in each direction) and is timed from the moment
// both threads are released to the last free, on CLOCK_MONOTONIC and the TSC. Each workload
// runs one untimed warm-up pass and --reps timed passes with the same two threads, and reports
// the median and range per alloc->free pair, and the process's peak RSS growth over the whole
// workload (VmHWM reset just before it). Output: "RESULT key=value ..." lines for
// tools/bench/message_alloc_bench.sh.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench_clock.h"
#include "message_variant.h"
#include "process_memory.h"
#include "spsc_ring.h"

namespace msgbench {
namespace {

using bench::Stopwatch;

constexpr std::size_t kSizeTable = 4096;  // power of two: a message's size is table[seq & mask]
constexpr std::uint64_t kWindow = 512;    // pingpong: messages in flight from A to B at most

struct Header {
  std::uint64_t seq;
  std::uint64_t check;  // seq * a constant ^ size: a torn or foreign block fails the check
};
constexpr std::uint64_t check_of(std::uint64_t seq, std::size_t size) {
  return seq * 0x9E3779B97F4A7C15ull ^ size;
}

struct Options {
  std::vector<std::string> workloads{"spsc-64", "spsc-mixed", "pingpong-64", "pingpong-mixed"};
  std::uint64_t messages = 2'000'000;
  int reps = 5;
  std::uint64_t seed = 42;
  bool pin = true;
  bool machine = false;
  bool verify_only = false;
};

[[noreturn]] void usage_error(const char* why) {
  std::fprintf(stderr,
               "%s\nusage: message_alloc_bench_<allocator> [options]\n"
               "  --workloads LIST  comma-separated subset of spsc-64,spsc-mixed,pingpong-64,"
               "pingpong-mixed\n"
               "  --messages N      messages per timed pass (default 2000000)\n"
               "  --reps N          timed passes per workload (default 5)\n"
               "  --seed N          seed of the mixed size table (default 42)\n"
               "  --no-pin          do not pin the two threads to CPUs of their own\n"
               "  --machine         print the TSC rate and build, then exit\n"
               "  --verify          check the allocator is the intended one, then exit\n",
               why);
  std::exit(2);
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage_error("missing value");
      return argv[++i];
    };
    if (arg == "--workloads") {
      o.workloads.clear();
      std::string list = value();
      for (std::size_t start = 0; start <= list.size();) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        o.workloads.push_back(list.substr(start, comma - start));
        start = comma + 1;
      }
    } else if (arg == "--messages") {
      o.messages = std::strtoull(value(), nullptr, 10);
    } else if (arg == "--reps") {
      o.reps = std::atoi(value());
    } else if (arg == "--seed") {
      o.seed = std::strtoull(value(), nullptr, 10);
    } else if (arg == "--no-pin") {
      o.pin = false;
    } else if (arg == "--machine") {
      o.machine = true;
    } else if (arg == "--verify") {
      o.verify_only = true;
    } else {
      usage_error(("unknown option " + std::string(arg)).c_str());
    }
  }
  if (o.messages == 0 || o.reps < 1) usage_error("--messages and --reps must be positive");
  return o;
}

// ---- message sizes ---------------------------------------------------------------------------

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Static storage: building the table allocates nothing.
std::uint32_t g_sizes[kSizeTable];

// Returns a checksum of the table, so the driver can see every allocator got the same sizes.
std::uint64_t fill_sizes(bool mixed, std::uint64_t seed) {
  std::uint64_t state = seed;
  std::uint64_t sum = 0;
  for (std::uint32_t& size : g_sizes) {
    if (mixed) {
      // Log-uniform on [16, 1024): as many messages of 16..31 bytes as of 512..1023.
      const double u = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
      size = static_cast<std::uint32_t>(std::floor(16.0 * std::exp2(6.0 * u)));
    } else {
      size = 64;
    }
    sum = sum * 31 + size;
  }
  return sum;
}

// ---- the two threads -------------------------------------------------------------------------

// Sends message `seq`: allocates it and writes its header.
inline void* make(std::uint64_t seq) {
  const std::size_t size = g_sizes[seq & (kSizeTable - 1)];
  void* p = message_allocate(size);
  if (p == nullptr) {
    std::fprintf(stderr, "message_alloc_bench_%s: allocation of %zu bytes failed\n", variant_name(), size);
    std::abort();
  }
  *static_cast<Header*>(p) = Header{seq, check_of(seq, size)};
  return p;
}

// Receives message `seq`: checks its header and frees it.
inline void take(void* p, std::uint64_t seq) {
  const Header h = *static_cast<const Header*>(p);
  if (h.seq != seq || h.check != check_of(seq, g_sizes[seq & (kSizeTable - 1)])) {
    std::fprintf(stderr, "message_alloc_bench: message %llu arrived as %llu or damaged\n",
                 static_cast<unsigned long long>(seq), static_cast<unsigned long long>(h.seq));
    std::abort();
  }
  message_free(p);
}

void* wait_pop(SpscRing& ring) {
  unsigned spins = 0;
  for (;;) {
    if (void* p = ring.pop()) return p;
    SpscRing::relax(spins);
  }
}

struct Pass {
  bool pingpong = false;
  std::uint64_t messages = 0;
  SpscRing* to_b = nullptr;
  SpscRing* to_a = nullptr;
};

void run_a(const Pass& pass) {
  if (!pass.pingpong) {
    for (std::uint64_t seq = 0; seq < pass.messages; ++seq) pass.to_b->push(make(seq));
    pass.to_b->flush();
    return;
  }
  std::uint64_t sent = 0;
  std::uint64_t answered = 0;
  unsigned spins = 0;
  while (answered < pass.messages) {
    while (sent < pass.messages && sent - answered < kWindow) pass.to_b->push(make(sent++));
    pass.to_b->flush();
    bool any = false;
    while (void* reply = pass.to_a->pop()) {
      take(reply, answered++);
      any = true;
    }
    if (!any) SpscRing::relax(spins);
  }
}

void run_b(const Pass& pass) {
  for (std::uint64_t seq = 0; seq < pass.messages; ++seq) {
    void* p = pass.to_b->pop();
    if (p == nullptr) {
      // Caught up with A: A may be waiting for our replies before it sends more.
      if (pass.pingpong) pass.to_a->flush();
      p = wait_pop(*pass.to_b);
    }
    take(p, seq);
    if (pass.pingpong) pass.to_a->push(make(seq));
  }
  if (pass.pingpong) pass.to_a->flush();
}

// ---- passes, threads, CPUs -------------------------------------------------------------------

alignas(64) SpscRing g_to_b;
alignas(64) SpscRing g_to_a;

// The two threads live for a whole workload; the main thread starts each pass and collects its
// time. Thread A times the pass: from its start to B's last free (pingpong: A's last free).
struct Control {
  Pass pass;
  std::atomic<std::uint64_t> started{0};  // number of the pass to run
  std::atomic<std::uint64_t> a_done{0};
  std::atomic<std::uint64_t> b_done{0};
  std::atomic<bool> quit{false};
  Stopwatch::Span span{};
};

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  return cpus;
}

void pin_to(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

std::uint64_t wait_for_next(Control& c, std::uint64_t last) {
  unsigned spins = 0;
  for (;;) {
    const std::uint64_t n = c.started.load(std::memory_order_acquire);
    if (n != last || c.quit.load(std::memory_order_acquire)) return n;
    SpscRing::relax(spins);
  }
}

void thread_a(Control& c, int cpu) {
  pin_to(cpu);
  for (std::uint64_t last = 0;;) {
    const std::uint64_t n = wait_for_next(c, last);
    if (n == last) return;  // quit
    last = n;
    const Stopwatch sw;
    run_a(c.pass);
    unsigned spins = 0;
    while (c.b_done.load(std::memory_order_acquire) != n) SpscRing::relax(spins);
    c.span = sw.elapsed();
    c.a_done.store(n, std::memory_order_release);
  }
}

void thread_b(Control& c, int cpu) {
  pin_to(cpu);
  for (std::uint64_t last = 0;;) {
    const std::uint64_t n = wait_for_next(c, last);
    if (n == last) return;
    last = n;
    run_b(c.pass);
    c.b_done.store(n, std::memory_order_release);
  }
}

struct Sample {
  double ns = 0;
  double ticks = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void run_workload(const Options& o, const std::string& name, int cpu_a, int cpu_b) {
  const bool pingpong = name.rfind("pingpong-", 0) == 0;
  const std::string sizes = name.substr(name.find('-') + 1);
  if ((!pingpong && name.rfind("spsc-", 0) != 0) || (sizes != "64" && sizes != "mixed")) {
    usage_error(("unknown workload " + name).c_str());
  }
  const std::uint64_t table_sum = fill_sizes(sizes == "mixed", o.seed);
  const std::uint64_t pairs_per_pass = pingpong ? 2 * o.messages : o.messages;

  const bool rss_reset = bench::reset_peak_rss();
  const std::size_t rss_base = bench::current_rss_bytes();
  Control control;
  std::thread a(thread_a, std::ref(control), cpu_a);
  std::thread b(thread_b, std::ref(control), cpu_b);
  std::vector<double> ns;
  std::vector<double> ticks;
  for (int pass = 0; pass <= o.reps; ++pass) {  // pass 0: warm-up, a quarter of the messages
    control.pass = Pass{pingpong, pass == 0 ? std::max<std::uint64_t>(1, o.messages / 4) : o.messages,
                        &g_to_b, &g_to_a};
    const std::uint64_t n = static_cast<std::uint64_t>(pass) + 1;
    control.started.store(n, std::memory_order_release);
    unsigned spins = 0;
    while (control.a_done.load(std::memory_order_acquire) != n) SpscRing::relax(spins);
    if (pass == 0) continue;
    ns.push_back(static_cast<double>(control.span.ns) / static_cast<double>(pairs_per_pass));
    ticks.push_back(static_cast<double>(control.span.tsc) / static_cast<double>(pairs_per_pass));
  }
  control.quit.store(true, std::memory_order_release);
  a.join();
  b.join();
  const std::size_t peak = bench::peak_rss_bytes();
  std::printf("RESULT alloc=%s workload=%s messages=%llu pairs=%llu reps=%d ns_per_pair=%.2f "
              "ns_min=%.2f ns_max=%.2f cycles_per_pair=%.1f peak_rss_mb=%.2f rss_reset=%d "
              "sizes=%016llx cpus=%d,%d\n",
              variant_name(), name.c_str(), static_cast<unsigned long long>(o.messages),
              static_cast<unsigned long long>(pairs_per_pass), o.reps, median(ns),
              *std::min_element(ns.begin(), ns.end()), *std::max_element(ns.begin(), ns.end()),
              median(ticks), static_cast<double>(peak > rss_base ? peak - rss_base : 0) / 1e6,
              rss_reset ? 1 : 0, static_cast<unsigned long long>(table_sum), cpu_a, cpu_b);
  std::fflush(stdout);
}

}  // namespace
}  // namespace msgbench

int main(int argc, char** argv) {
  using namespace msgbench;
  const Options o = parse_options(argc, argv);
  if (o.machine) {
    std::printf("MACHINE tsc_mhz=%.1f compiler=\"%s\"\n", bench::estimate_tsc_hz(300) * 1e-6,
                __VERSION__);
    return 0;
  }
  const std::string description = variant_verify();
  std::printf("INFO alloc=%s version=\"%s\"\n", variant_name(), description.c_str());
  std::fflush(stdout);
  if (o.verify_only) return 0;

  int cpu_a = -1;
  int cpu_b = -1;
  if (o.pin) {
    const std::vector<int> cpus = allowed_cpus();
    if (!cpus.empty()) {
      cpu_a = cpus[0];
      cpu_b = cpus.size() > 1 ? cpus[1] : cpus[0];
    }
  }
  // The first tens of milliseconds of a process run slower on virtual machines.
  const Stopwatch settle;
  while (settle.elapsed().ns < 200'000'000) {
  }
  for (const std::string& name : o.workloads) run_workload(o, name, cpu_a, cpu_b);
  return 0;
}
