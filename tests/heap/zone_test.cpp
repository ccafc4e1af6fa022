// The zone: one fixed range of address space, cut into 64 MiB chunks, that every heap lives in.
// It can be configured only before it is reserved, and any address in a heap's chunk is owned by
// that heap while nothing outside the zone is owned by any heap.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "reheap/heap.h"
#include "reheap/zone.h"

namespace reheap {
namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr std::size_t GiB = std::size_t{1} << 30;
constexpr std::size_t TiB = std::size_t{1} << 40;

std::uintptr_t address_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

const void* at(std::uintptr_t address) { return reinterpret_cast<const void*>(address); }

bool zone_set_by_environment() {
  return std::getenv("REHEAP_ZONE_BASE") != nullptr || std::getenv("REHEAP_ZONE_SIZE") != nullptr;
}

TEST(Zone, DefaultsTo64TiBAt17TiBOr448GiBAt64GiBUnderThreadSanitizer) {
  const ZoneConfig config = Zone::default_config();
#if defined(__SANITIZE_THREAD__)
  EXPECT_EQ(config.base, 64 * GiB);
  EXPECT_EQ(config.size, 448 * GiB);
#else
  EXPECT_EQ(config.base, 17 * TiB);
  EXPECT_EQ(config.size, 64 * TiB);
#endif
}

TEST(Zone, IsReservedOnceAHeapExistsAndDescribesItsRange) {
  HeapPtr heap = Heap::create();
  EXPECT_TRUE(Zone::reserved());
  const ZoneStats stats = Zone::stats();
  EXPECT_EQ(stats.chunk_size, 64 * MiB);
  EXPECT_EQ(stats.base % stats.chunk_size, 0u);
  EXPECT_EQ(stats.size % stats.chunk_size, 0u);
  if (!zone_set_by_environment()) {
    EXPECT_EQ(stats.base, Zone::default_config().base);
    EXPECT_EQ(stats.size, Zone::default_config().size);
  }
  EXPECT_GE(stats.live_heaps, 1u);
  void* p = heap->allocate(64);
  void* q = heap->allocate(5 * MiB);
  for (const void* block : {p, q}) {
    EXPECT_GE(address_of(block), stats.base);
    EXPECT_LT(address_of(block), stats.base + stats.size);
  }
  heap->deallocate(p);
  heap->deallocate(q);
}

TEST(Zone, ConfiguringItAfterItIsReservedThrowsLogicError) {
  HeapPtr heap = Heap::create();
  ASSERT_TRUE(Zone::reserved());
  const ZoneStats before = Zone::stats();
  EXPECT_THROW(Zone::configure(Zone::default_config()), std::logic_error);
  EXPECT_THROW(Zone::configure(ZoneConfig{}), std::logic_error);
  EXPECT_THROW(Zone::configure(ZoneConfig{32 * TiB, 1 * TiB}), std::logic_error);
  const ZoneStats after = Zone::stats();
  EXPECT_EQ(after.base, before.base);
  EXPECT_EQ(after.size, before.size);
  void* p = heap->allocate(64);
  EXPECT_TRUE(heap->owns(p));
  heap->deallocate(p);
}

// Not in ThreadSanitizer builds: 32 TiB lies outside its application range.
#if !defined(__SANITIZE_THREAD__)
[[noreturn]] void configure_a_zone_then_allocate_in_it_and_exit() {
  // Exit codes say which expectation failed.
  if (Zone::reserved()) std::exit(2);
  const std::uintptr_t base = 32 * TiB;
  const std::size_t size = 256 * GiB;
  try {
    Zone::configure(ZoneConfig{base + 4096, size});  // unaligned
    std::exit(3);
  } catch (const std::logic_error&) {
  }
  Zone::configure(ZoneConfig{base, size});
  HeapPtr heap = Heap::create();
  void* p = heap->allocate(64);
  void* q = heap->allocate(3 * MiB);
  const ZoneStats stats = Zone::stats();
  if (stats.base != base || stats.size != size) std::exit(4);
  for (const void* block : {p, q}) {
    if (address_of(block) < base || address_of(block) >= base + size) std::exit(5);
  }
  heap.reset();
  std::exit(0);
}

TEST(ZoneDeathTest, ConfiguringItBeforeFirstUsePlacesEveryHeapInTheChosenRange) {
  if (zone_set_by_environment()) {
    GTEST_SKIP() << "this run configures the zone (REHEAP_ZONE_BASE or REHEAP_ZONE_SIZE is set)";
  }
  testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_EXIT(configure_a_zone_then_allocate_in_it_and_exit(), testing::ExitedWithCode(0), "");
}
#endif  // !defined(__SANITIZE_THREAD__)

TEST(Zone, NoAddressOutsideTheZoneIsOwnedByAHeap) {
  HeapPtr heap = Heap::create();
  const ZoneStats stats = Zone::stats();
  int on_stack = 0;
  auto from_system = std::make_unique<int>(0);
  EXPECT_EQ(Heap::owner_of(nullptr), nullptr);
  EXPECT_EQ(Heap::owner_of(&on_stack), nullptr);
  EXPECT_EQ(Heap::owner_of(from_system.get()), nullptr);
  EXPECT_EQ(Heap::owner_of(at(stats.base - 1)), nullptr);
  EXPECT_EQ(Heap::owner_of(at(stats.base + stats.size)), nullptr);
  EXPECT_EQ(Heap::owner_of(at(~std::uintptr_t{0})), nullptr);
  EXPECT_FALSE(heap->owns(&on_stack));
}

TEST(Zone, EveryAddressOfAHeapsChunkIsOwnedByThatHeap) {
  HeapPtr heap = Heap::create();
  const std::size_t chunk = Zone::stats().chunk_size;
  for (std::size_t size : {std::size_t{64}, std::size_t{200000}, 3 * MiB}) {
    void* p = heap->allocate(size);
    ASSERT_NE(p, nullptr);
    const std::uintptr_t chunk_start = address_of(p) / chunk * chunk;
    EXPECT_EQ(Heap::owner_of(at(chunk_start)), heap.get()) << "size " << size;
    EXPECT_EQ(Heap::owner_of(at(chunk_start + chunk / 2)), heap.get()) << "size " << size;
    EXPECT_EQ(Heap::owner_of(at(chunk_start + chunk - 1)), heap.get()) << "size " << size;
    heap->deallocate(p);
  }
}

TEST(Zone, AChunkOfOneHeapIsNotOwnedByAnother) {
  HeapPtr a = Heap::create();
  HeapPtr b = Heap::create();
  void* p = a->allocate(64);
  void* q = b->allocate(64);
  EXPECT_TRUE(a->owns(p));
  EXPECT_FALSE(a->owns(q));
  EXPECT_TRUE(b->owns(q));
  EXPECT_FALSE(b->owns(p));
  a->deallocate(p);
  b->deallocate(q);
}

}  // namespace
}  // namespace reheap
