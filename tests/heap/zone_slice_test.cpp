// The zone's slices (zone.h, "Slices"): a node's new heaps fill its slice from its incarnation's
// window, wrap around to the slice's beginning, and only then spill into the rest of the half; a
// chunk freed in the slice is taken again before any outside it.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "reheap/heap.h"
#include "reheap/node_identity.h"
#include "reheap/zone.h"

namespace reheap {
namespace {

constexpr std::size_t GiB = std::size_t{1} << 30;
constexpr std::size_t MiB = std::size_t{1} << 20;

std::size_t first_chunk(const Heap& heap) { return static_cast<std::size_t>((heap.id() & 0xffffffffu) - 1); }

// In a fresh process (exit codes say which expectation failed): a 64 GiB zone has 512 class
// chunks, so 64 slices of 8 chunks with windows of 1 chunk; node 5's slice is [40, 48).
[[noreturn]] void fill_node_fives_slice_and_exit() {
  if (Zone::reserved()) std::exit(2);
  Zone::configure(ZoneConfig{Zone::default_config().base, 64 * GiB, 0, 5});  // no quarantine
  HeapCacheConfig no_cache;  // and no heap cache: a destroyed heap's chunk is freed at once
  no_cache.heaps = 0;
  Zone::set_heap_cache(no_cache);
  std::vector<HeapPtr> heaps;
  heaps.push_back(Heap::create());
  const NodeIdentity id = NodeIdentity::current();
  if (id.node != 5) std::exit(3);
  const std::size_t begin = 40;
  const std::size_t end = 48;
  const std::size_t start = begin + id.incarnation % 8;
  if (Zone::stats().class_start_chunk != start) std::exit(4);
  for (std::size_t i = 1; i < 8; ++i) heaps.push_back(Heap::create());
  // From the window to the slice's end, then from the slice's beginning up to the window.
  for (std::size_t i = 0; i < 8; ++i) {
    const std::size_t want = start + i < end ? start + i : begin + (start + i - end);
    if (first_chunk(*heaps[i]) != want) std::exit(10 + static_cast<int>(i));
  }
  // The slice is full: the next heap spills just above it.
  heaps.push_back(Heap::create());
  if (first_chunk(*heaps.back()) != end) std::exit(5);
  // A chunk freed in the slice is preferred to any outside it.
  const std::size_t freed = first_chunk(*heaps[3]);
  heaps[3].reset();
  heaps[3] = Heap::create();
  if (first_chunk(*heaps[3]) != freed) std::exit(6);
  // Large chunks come from the node's slice of the large half.
  void* big = heaps[0]->allocate(10 * MiB);
  const ZoneStats z = Zone::stats();
  const std::size_t large = (reinterpret_cast<std::uintptr_t>(big) - z.base) / z.chunk_size;
  if (large != 512 + start) std::exit(7);
  heaps[0]->deallocate(big);
  heaps.clear();
  std::exit(0);
}

TEST(ZoneSliceDeathTest, ANodesHeapsFillItsSliceFromTheWindowWrapAroundThenSpill) {
  if (std::getenv("REHEAP_ZONE_BASE") != nullptr || std::getenv("REHEAP_ZONE_SIZE") != nullptr) {
    GTEST_SKIP() << "this run configures the zone (REHEAP_ZONE_BASE or REHEAP_ZONE_SIZE is set)";
  }
  testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_EXIT(fill_node_fives_slice_and_exit(), testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace reheap
