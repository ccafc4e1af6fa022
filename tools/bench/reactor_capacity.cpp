// How many reactors fit, and what an idle one costs: spawns N reactors (default 100,000) on the
// runtime's workers, waits until every one has run on_start, and reports the resident memory and
// page tables they added, per reactor, then stops them all and reports the time each phase took.
//
// usage: reactor_capacity [--reactors N] [--workers W] [--state BYTES]
//   --state BYTES  each reactor allocates this much state in on_start (default 0: an empty
//                  reactor: its heap's own metadata and the object itself)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_clock.h"
#include "process_memory.h"
#include "reheap/runtime.h"
#include "reheap/zone.h"

namespace {

class Idle : public reheap::Reactor {
 public:
  explicit Idle(std::size_t state) : state_(state) {}
  void on_start() override {
    if (state_ > 0) data_.assign(state_, 'x');
  }

 private:
  std::size_t state_;
  std::string data_;
};

double mib(std::size_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 100'000;
  int workers = 2;
  std::size_t state = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--reactors") == 0) {
      n = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (std::strcmp(argv[i], "--workers") == 0) {
      workers = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--state") == 0) {
      state = std::strtoull(argv[i + 1], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: %s [--reactors N] [--workers W] [--state BYTES]\n", argv[0]);
      return 2;
    }
  }
  reheap::Runtime rt(reheap::RuntimeConfig{.workers = workers});
  // One reactor first, so that the zone, the cell table's first block and the workers' own
  // memory are not counted against the N.
  const reheap::ActorRef first = rt.spawn<Idle>(state);
  rt.wait_idle();
  const std::size_t rss0 = bench::current_rss_bytes();
  const std::size_t pte0 = bench::page_table_bytes();

  std::vector<reheap::ActorRef> refs;
  refs.reserve(n);
  bench::Stopwatch spawn_clock;
  for (std::size_t i = 0; i < n; ++i) refs.push_back(rt.spawn<Idle>(state));
  if (!rt.wait_idle(std::chrono::minutes(5))) {
    std::fprintf(stderr, "reactor_capacity: the reactors did not all start\n");
    return 1;
  }
  const auto spawned = spawn_clock.elapsed();
  const std::size_t rss1 = bench::current_rss_bytes();
  const std::size_t pte1 = bench::page_table_bytes();
  const reheap::ReactorStats one = rt.stats(refs.back());
  const reheap::RuntimeStats all = rt.stats();
  const reheap::ZoneStats zone = reheap::Zone::stats();

  bench::Stopwatch stop_clock;
  for (const reheap::ActorRef r : refs) rt.stop(r);
  for (const reheap::ActorRef r : refs) rt.wait_stopped(r, std::chrono::minutes(1));
  const auto stopped = stop_clock.elapsed();
  rt.stop(first);

  const double per_rss = static_cast<double>(rss1 - rss0) / static_cast<double>(n);
  const double per_pte = static_cast<double>(pte1 - pte0) / static_cast<double>(n);
  std::printf("reactors          %zu live at once (runtime says %zu), %d workers, state %zu B\n", n,
              all.reactors, workers, state);
  std::printf("zone              %zu class chunks + %zu large chunks in use (64 MiB address "
              "space each)\n",
              zone.class_chunks_in_use, zone.large_chunks_in_use);
  std::printf("memory added      RSS %.1f MiB, page tables %.1f MiB\n", mib(rss1 - rss0),
              mib(pte1 - pte0));
  std::printf("per idle reactor  %.0f B RSS + %.0f B page tables = %.1f KiB; its heap commits "
              "%zu B (%zu B live)\n",
              per_rss, per_pte, (per_rss + per_pte) / 1024.0, one.heap_committed_bytes,
              one.heap_live_bytes);
  std::printf("spawn+start       %.3f s (%.2f us per reactor)\n",
              static_cast<double>(spawned.ns) / 1e9,
              static_cast<double>(spawned.ns) / 1e3 / static_cast<double>(n));
  std::printf("stop              %.3f s (%.2f us per reactor)\n",
              static_cast<double>(stopped.ns) / 1e9,
              static_cast<double>(stopped.ns) / 1e3 / static_cast<double>(n));
  std::printf("RESULT test=capacity reactors=%zu rss_per_reactor=%.0f pte_per_reactor=%.0f "
              "spawn_us=%.2f stop_us=%.2f\n",
              n, per_rss, per_pte, static_cast<double>(spawned.ns) / 1e3 / static_cast<double>(n),
              static_cast<double>(stopped.ns) / 1e3 / static_cast<double>(n));
  return 0;
}
