// heap_lifecycle: what a heap costs to create, keep and destroy.
//
// Prints, for N heaps (default 100,000): the time to create and destroy an empty heap, and one
// holding a std::string, an int and a double[10], reusing the same chunk (steady state); the same
// with all N heaps alive at once, where every heap touches fresh address space (page faults and
// page-table pages, which in a VM may also fault in the host); and the memory an idle heap holds:
// its own committed_bytes, and the process's RSS and page-table (VmPTE) growth per heap; and,
// after the live heaps are destroyed, what the heap cache keeps of them and the RSS
// once Zone::purge_heap_cache() gave it back.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "process_memory.h"
#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/zone.h"

namespace {

using Clock = std::chrono::steady_clock;

double us_per(Clock::time_point a, Clock::time_point b, int n) {
  return std::chrono::duration<double, std::micro>(b - a).count() / n;
}

// Keeps the compiler from eliding allocations whose result is unused (it may, for operator new).
void escape(void* p) { asm volatile("" : : "g"(p) : "memory"); }

void populate(reheap::Heap& heap) {
  reheap::HeapScope scope(heap);
  escape(new std::string(100, 'x'));
  escape(new int(1));
  escape(new double[10]);
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 100000;
  reheap::Heap::create();  // reserve the zone outside the timed loops
  for (int round = 0; round < 3; ++round) {
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) reheap::Heap::create();
    auto t1 = Clock::now();
    for (int i = 0; i < n; ++i) populate(*reheap::Heap::create());
    auto t2 = Clock::now();
    std::printf("round %d: create+destroy empty %.2f us, with 3 objects %.2f us\n", round,
                us_per(t0, t1, n), us_per(t1, t2, n));
  }
  std::vector<reheap::HeapPtr> heaps;
  heaps.reserve(static_cast<std::size_t>(n));
  const std::size_t rss0 = bench::current_rss_bytes(), pte0 = bench::page_table_bytes();
  auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) heaps.push_back(reheap::Heap::create());
  auto t1 = Clock::now();
  for (auto& h : heaps) populate(*h);
  auto t2 = Clock::now();
  const std::size_t rss1 = bench::current_rss_bytes(), pte1 = bench::page_table_bytes();
  const reheap::HeapStats s = heaps.front()->stats();
  const reheap::ZoneStats z = reheap::Zone::stats();
  heaps.clear();
  auto t3 = Clock::now();
  std::printf("%d live heaps: create %.2f us, populate %.2f us, destroy %.2f us each\n", n,
              us_per(t0, t1, n), us_per(t1, t2, n), us_per(t2, t3, n));
  // After the burst: the destroyed heaps the heap cache kept (zone.h, "Recycling") hold
  // RSS until purged, as a runtime worker does after half a second of sleep.
  const std::size_t rss_after = bench::current_rss_bytes();
  const reheap::ZoneStats cached = reheap::Zone::stats();
  const auto p0 = Clock::now();
  const std::size_t purged = reheap::Zone::purge_heap_cache();
  const auto p1 = Clock::now();
  std::printf("after the burst: RSS %+.1f MiB over the start, %zu heaps cached (%.1f MiB retained); "
              "purge_heap_cache gave back %.1f MiB in %.0f us: RSS %+.1f MiB over the start\n",
              (double(rss_after) - double(rss0)) / 1048576, cached.cached_heaps,
              double(cached.retained_bytes) / 1048576, double(purged) / 1048576,
              std::chrono::duration<double, std::micro>(p1 - p0).count(),
              (double(bench::current_rss_bytes()) - double(rss0)) / 1048576);
  std::printf("idle heap with 3 objects: committed_bytes %zu, reserved %zu MiB; per heap RSS "
              "%.1f KiB, page tables %.1f KiB; zone held %zu heaps in %zu class chunks\n",
              s.committed_bytes, s.reserved_bytes >> 20, double(rss1 - rss0) / 1024 / n,
              double(pte1 - pte0) / 1024 / n, z.live_heaps, z.class_chunks_in_use);
  return 0;
}
