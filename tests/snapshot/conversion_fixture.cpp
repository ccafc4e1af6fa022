#include "conversion_fixture.h"

#include <cstring>
#include <iterator>
#include <new>

#include "misuse_support.h"
#include "reheap/size_class.h"
#include "reheap/snapshot.h"

#ifndef REHEAP_FIXTURE_DIR
#error "tests/CMakeLists.txt defines REHEAP_FIXTURE_DIR, the directory of the committed fixtures"
#endif

namespace reheap::snaptest {
namespace {

constexpr bool kThisBuildChecked = testsupport::kChecked;

constexpr std::size_t kWhole = 2 * kPageSize;

// SplitMix64's finaliser: fixed here for good, since the committed files hold its output.
std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t offset) {
  std::uint64_t z = seed * 0x9e37'79b9'7f4a'7c15u + offset;
  z = (z ^ (z >> 30)) * 0xbf58'476d'1ce4'e5b9u;
  z = (z ^ (z >> 27)) * 0x94d0'49bb'1331'11ebu;
  return z ^ (z >> 31);
}

// Calls f(offset, bytes) for each word of the pattern (the last may be short).
template <typename F>
bool each_word(std::size_t size, F f) {
  for (std::size_t i = 0; i < size; i += 8) {
    if (size > kWhole && i == kPageSize) i = (size - kPageSize) / 8 * 8;  // skip to the last page
    if (!f(i, size - i < 8 ? size - i : 8)) return false;
  }
  return true;
}

// Class blocks of sizes spread over small and medium classes, page runs and a huge block.
constexpr std::size_t kClassSizes[] = {8, 24, 64, 200, 1000, 4096, 16384};
constexpr std::size_t kClassBlocks = 6;  // per size; the odd ones are freed
constexpr std::size_t kRunSizes[] = {20000, 40000, 100000};  // the middle one is freed
constexpr std::size_t kHugeSize = std::size_t{3} << 20;

}  // namespace

void fill_fixture_pattern(void* p, std::size_t size, std::uint64_t seed) {
  auto* out = static_cast<unsigned char*>(p);
  each_word(size, [&](std::size_t i, std::size_t n) {
    const std::uint64_t w = pattern_word(seed, i);
    std::memcpy(out + i, &w, n);
    return true;
  });
}

bool fixture_pattern_intact(const void* p, std::size_t size, std::uint64_t seed) {
  const auto* in = static_cast<const unsigned char*>(p);
  return each_word(size, [&](std::size_t i, std::size_t n) {
    const std::uint64_t w = pattern_word(seed, i);
    return std::memcmp(in + i, &w, n) == 0;
  });
}

void save_conversion_fixture(const std::filesystem::path& file) {
  HeapPtr heap = Heap::create();
  auto* root = static_cast<FixtureRoot*>(heap->allocate(sizeof(FixtureRoot)));
  if (root == nullptr) throw std::bad_alloc();
  *root = FixtureRoot{};
  root->checked_build = kThisBuildChecked ? 1 : 0;
  std::uint64_t seed = 1;
  auto allocate = [&](std::size_t size) {
    void* p = heap->allocate(size);
    if (p == nullptr) throw std::bad_alloc();
    fill_fixture_pattern(p, size, seed);
    return FixtureBlock{p, size, seed++};
  };
  FixtureBlock blocks[kFixtureLive + kFixtureFreed];
  std::size_t n = 0;
  for (std::size_t size : kClassSizes) {
    for (std::size_t i = 0; i < kClassBlocks; ++i) blocks[n++] = allocate(size);
  }
  for (std::size_t size : kRunSizes) blocks[n++] = allocate(size);
  blocks[n++] = allocate(kHugeSize);
  // Freeing in allocation order leaves each class's list headed by its last odd block, with the
  // earlier ones behind it: both a head and a block inside a list are there to free again.
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t in_class = i % kClassBlocks;
    const bool is_class_block = i < std::size(kClassSizes) * kClassBlocks;
    const bool freed = is_class_block ? in_class % 2 == 1 : blocks[i].size == kRunSizes[1];
    if (freed) {
      heap->deallocate(blocks[i].p);
      root->freed[root->freed_count++] = blocks[i];
    } else {
      root->live[root->live_count++] = blocks[i];
    }
  }
  heap->set_root(root);
  Snapshotter snapshotter(*heap);
  snapshotter.save(file);
}

std::string check_conversion_fixture(const Heap& heap) {
  const auto* root = static_cast<const FixtureRoot*>(heap.root());
  if (root == nullptr) return "the heap has no root";
  if (root->magic != kFixtureMagic) return "the root is not a fixture root";
  if (root->live_count > kFixtureLive || root->freed_count > kFixtureFreed) return "the root's counts";
  if (root->live_count == 0 || root->freed_count == 0) return "the fixture holds no blocks";
  for (std::size_t i = 0; i < root->live_count; ++i) {
    const FixtureBlock& b = root->live[i];
    if (!heap.owns(b.p)) return "live block " + std::to_string(i) + " is not the heap's";
    if (heap.usable_size(b.p) < b.size) return "live block " + std::to_string(i) + " shrank";
    if (!fixture_pattern_intact(b.p, b.size, b.seed)) return "live block " + std::to_string(i) + " changed";
  }
  return "";
}

std::filesystem::path other_build_fixture() {
  return std::filesystem::path(REHEAP_FIXTURE_DIR) / (kThisBuildChecked ? "release.snap" : "checked.snap");
}

std::filesystem::path this_build_fixture() {
  return std::filesystem::path(REHEAP_FIXTURE_DIR) / (kThisBuildChecked ? "checked.snap" : "release.snap");
}

}  // namespace reheap::snaptest
