// zone_search_bench: how long a request the zone cannot meet takes in a fragmented zone. The
// large half is cut into 2,000 used and free regions (huge blocks of two chunks, every other one
// freed) and three 10 TiB blocks of which the middle one is freed; then 11 TiB and 16 TiB requests
// must fail. The zone lock is held for the whole search, so this is also how long every other
// thread's Heap::create waits. A chunk-by-chunk first fit took seconds here; the search over
// regions takes microseconds. Build it against another revision to compare (the quarantine call
// is then left out: set REHEAP_NO_QUARANTINE_CALL).
#include <chrono>
#include <cstdio>
#include <vector>

#include "reheap/heap.h"
#include "reheap/zone.h"

int main() {
#ifndef REHEAP_NO_QUARANTINE_CALL
  reheap::Zone::set_quarantine(0);  // freed chunks are free at once: the fragments are holes
#endif
  std::vector<reheap::HeapPtr> heaps;
  for (int i = 0; i < 2000; ++i) {
    heaps.push_back(reheap::Heap::create());
    heaps.back()->allocate(std::size_t{100} << 20);
    heaps.back()->deallocate(heaps.back()->allocate(std::size_t{100} << 20));
  }
  reheap::HeapPtr heap = reheap::Heap::create();
  heap->allocate(std::size_t{10} << 40);
  void* middle = heap->allocate(std::size_t{10} << 40);
  heap->allocate(std::size_t{10} << 40);
  heap->deallocate(middle);
  for (std::size_t tib : {11, 16}) {
    const auto t0 = std::chrono::steady_clock::now();
    void* p = heap->allocate(tib << 40);
    const double us = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e6;
    std::printf("%zu TiB request in a fragmented zone: %s in %.1f us\n", tib, p != nullptr ? "met" : "refused", us);
  }
  return 0;
}
