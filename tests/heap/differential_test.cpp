// A randomized differential test: a long random sequence of allocations, frees and reallocations
// of sizes drawn log-uniformly from 1 B to 2 MiB, checked against a reference model of the live
// blocks. Every block is filled with a pattern derived from its id, and the whole pattern is
// verified before the block is freed or reallocated; after a reallocation the preserved prefix is
// verified again. Blocks never overlap, usable sizes follow the size classes, and the heap's
// statistics agree with the model.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <random>
#include <vector>

#include "reheap/heap.h"
#include "reheap/size_class.h"

namespace reheap {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr std::size_t kOperations = 400'000;
#else
constexpr std::size_t kOperations = 1'000'000;
#endif
constexpr std::size_t kMaxRequest = std::size_t{2} << 20;
constexpr std::size_t kTargetLiveBlocks = 600;
constexpr std::size_t kStatsEvery = 2000;
constexpr std::size_t kPurgeEvery = 5000;  // purge_free_lanes and purge_free_runs
constexpr std::uint64_t kSeed = 0x5EED'2024'0001ull;

// The pattern of block `id` is the source text starting at an offset derived from the id, so a
// block's bytes depend on both its id and the position; filling and checking are memcpy/memcmp.
class Patterns {
 public:
  static constexpr std::size_t kOffsets = 65536;

  Patterns() : source_(kMaxRequest + kOffsets) {
    std::mt19937_64 rng(kSeed ^ 0xFACE);
    for (std::size_t i = 0; i < source_.size(); i += 8) {
      const std::uint64_t word = rng();
      std::memcpy(&source_[i], &word, std::min<std::size_t>(8, source_.size() - i));
    }
  }
  const unsigned char* of(std::uint64_t id) const {
    return source_.data() + (id * 0x9E3779B97F4A7C15ull >> 40) % kOffsets;
  }
  void fill(void* p, std::size_t from, std::size_t to, std::uint64_t id) const {
    std::memcpy(static_cast<unsigned char*>(p) + from, of(id) + from, to - from);
  }
  bool holds(const void* p, std::size_t n, std::uint64_t id) const {
    return std::memcmp(p, of(id), n) == 0;
  }

 private:
  std::vector<unsigned char> source_;
};

enum class Kind { kClass, kLarge, kHuge };

Kind kind_of(std::size_t size) {
  if (size <= kMaxClassSize) return Kind::kClass;
  return size <= kMaxLargeSize ? Kind::kLarge : Kind::kHuge;
}

struct LiveBlock {
  std::uint64_t id;
  std::size_t size;    // requested
  std::size_t usable;  // reported by usable_size()
  Kind kind;           // set by the request that placed the block; resizing in place keeps it
  std::uintptr_t address;
  std::size_t slot;  // index in Model::addresses
};

std::size_t round_up_to_pages(std::size_t size) {
  return (size + kPageSize - 1) / kPageSize * kPageSize;
}

// The live blocks by address, and an array of their addresses for picking one at random.
class Model {
 public:
  std::map<std::uintptr_t, LiveBlock> blocks;
  std::vector<std::uintptr_t> addresses;

  void insert(LiveBlock block) {
    block.slot = addresses.size();
    addresses.push_back(block.address);
    blocks.emplace(block.address, block);
  }
  LiveBlock erase(std::uintptr_t address) {
    auto it = blocks.find(address);
    const LiveBlock block = it->second;
    blocks.erase(it);
    if (block.slot + 1 != addresses.size()) {
      addresses[block.slot] = addresses.back();
      blocks.at(addresses[block.slot]).slot = block.slot;
    }
    addresses.pop_back();
    return block;
  }
  // Whether [address, address + usable) overlaps a block of the model.
  bool overlaps(std::uintptr_t address, std::size_t usable) const {
    auto next = blocks.lower_bound(address);
    if (next != blocks.end() && next->first < address + usable) return true;
    if (next != blocks.begin()) {
      auto previous = std::prev(next);
      if (previous->first + previous->second.usable > address) return true;
    }
    return false;
  }
};

std::uintptr_t address_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

void* pointer_to(std::uintptr_t address) { return reinterpret_cast<void*>(address); }

// Log-uniform in [1, kMaxRequest].
std::size_t draw_size(std::mt19937_64& rng) {
  const double unit = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  const double size = std::exp2(unit * std::log2(static_cast<double>(kMaxRequest)));
  return std::clamp<std::size_t>(static_cast<std::size_t>(size), 1, kMaxRequest);
}

// Checks a block that was just allocated (`resized` null), or that `resized` was reallocated into.
::testing::AssertionResult block_is_well_formed(const Heap& heap, const void* p, std::size_t size,
                                                const LiveBlock* resized, const Model& model) {
  if (p == nullptr) return ::testing::AssertionFailure() << "null for " << size << " bytes";
  const std::size_t usable = heap.usable_size(p);
  const bool in_place = resized != nullptr && address_of(p) == resized->address;
  const Kind kind = in_place ? resized->kind : kind_of(size);
  bool as_expected = usable >= size;
  switch (kind) {
    case Kind::kClass:
      // A class block resized in place is the same block; a new one is of the size's class.
      as_expected = as_expected && usable == (in_place ? resized->usable
                                                       : std::size_t{kClassSize[size_class(size)]});
      break;
    case Kind::kLarge:
      as_expected = as_expected && usable % kPageSize == 0 &&
                    (in_place || usable == round_up_to_pages(size));
      break;
    case Kind::kHuge:
      break;
  }
  if (!as_expected) {
    return ::testing::AssertionFailure()
           << "usable_size " << usable << " for " << size << (in_place ? " (in place)" : "");
  }
  const std::size_t alignment = size > 8 ? 16 : 8;
  if (address_of(p) % alignment != 0) {
    return ::testing::AssertionFailure() << p << " misaligned for " << size << " bytes";
  }
  if (!heap.owns(p)) return ::testing::AssertionFailure() << p << " not owned by the heap";
  if (model.overlaps(address_of(p), usable)) {
    return ::testing::AssertionFailure() << p << " (+" << usable << ") overlaps a live block";
  }
  return ::testing::AssertionSuccess();
}

// The heap's statistics against the model.
void expect_stats_match(const Heap& heap, const Model& model, std::size_t operation) {
  std::size_t live_bytes = 0;
  std::array<std::uint64_t, kNumClasses> class_blocks{};
  std::uint64_t large_blocks = 0, huge_blocks = 0;
  std::size_t large_bytes = 0, huge_bytes = 0;
  for (const auto& [address, block] : model.blocks) {
    live_bytes += block.usable;
    switch (block.kind) {
      case Kind::kClass:
        ++class_blocks[size_class(block.usable)];
        break;
      case Kind::kLarge:
        ++large_blocks;
        large_bytes += block.usable;
        break;
      case Kind::kHuge:
        ++huge_blocks;
        huge_bytes += block.usable;
        break;
    }
  }
  const HeapStats stats = heap.stats();
  EXPECT_EQ(stats.live_blocks, model.blocks.size()) << "after operation " << operation;
  EXPECT_EQ(stats.live_bytes, live_bytes) << "after operation " << operation;
  for (unsigned c = 0; c < kNumClasses; ++c) {
    EXPECT_EQ(stats.classes[c].live_blocks, class_blocks[c])
        << "class " << c << " after operation " << operation;
  }
  EXPECT_EQ(stats.large_live_blocks, large_blocks) << "after operation " << operation;
  EXPECT_EQ(stats.large_live_bytes, large_bytes) << "after operation " << operation;
  EXPECT_EQ(stats.huge_live_blocks, huge_blocks) << "after operation " << operation;
  EXPECT_EQ(stats.huge_live_bytes, huge_bytes) << "after operation " << operation;
  EXPECT_GE(stats.committed_bytes, live_bytes) << "after operation " << operation;
  EXPECT_EQ(stats.failed_allocations, 0u) << "after operation " << operation;
}

TEST(Differential, RandomAllocationsFreesAndReallocationsAgreeWithAReferenceModel) {
  SCOPED_TRACE(testing::Message() << "seed " << kSeed << ", " << kOperations << " operations");
  const Patterns patterns;
  std::mt19937_64 rng(kSeed);
  HeapPtr heap = Heap::create();
  Model model;
  std::uint64_t next_id = 0;
  std::size_t allocations = 0, frees = 0, reallocations = 0, kept_in_place = 0;
  std::size_t purged_bytes = 0;

  for (std::size_t op = 0; op < kOperations; ++op) {
    const unsigned roll = static_cast<unsigned>(rng() % 100);
    const unsigned allocate_share = model.blocks.size() < kTargetLiveBlocks ? 50 : 30;
    if (model.blocks.empty() || roll < allocate_share) {
      const std::size_t size = draw_size(rng);
      void* p = heap->allocate(size);
      ASSERT_TRUE(block_is_well_formed(*heap, p, size, nullptr, model)) << "operation " << op;
      const std::uint64_t id = next_id++;
      patterns.fill(p, 0, size, id);
      model.insert(LiveBlock{id, size, heap->usable_size(p), kind_of(size), address_of(p), 0});
      ++allocations;
    } else {
      const std::uintptr_t address = model.addresses[rng() % model.addresses.size()];
      void* p = pointer_to(address);
      const LiveBlock block = model.erase(address);
      ASSERT_TRUE(patterns.holds(p, block.size, block.id))
          << "block " << block.id << " of " << block.size << " bytes at " << p
          << " was overwritten; operation " << op;
      if (roll < allocate_share + 35) {
        heap->deallocate(p);
        ++frees;
      } else {
        const std::size_t new_size = draw_size(rng);
        void* q = heap->reallocate(p, new_size);
        ASSERT_TRUE(block_is_well_formed(*heap, q, new_size, &block, model))
            << "reallocating " << block.size << " to " << new_size << "; operation " << op;
        const std::size_t kept = std::min(block.size, new_size);
        ASSERT_TRUE(patterns.holds(q, kept, block.id))
            << "reallocating " << block.size << " to " << new_size
            << " lost the contents; operation " << op;
        // A class block whose class already fits the new size stays where it is.
        if (block.kind == Kind::kClass && new_size <= kMaxClassSize &&
            size_class(new_size) == size_class(block.usable)) {
          ASSERT_EQ(q, p) << "reallocating " << block.size << " to " << new_size
                          << " within a class moved the block; operation " << op;
        }
        if (q == p) ++kept_in_place;
        patterns.fill(q, kept, new_size, block.id);
        model.insert(LiveBlock{block.id, new_size, heap->usable_size(q),
                               q == p ? block.kind : kind_of(new_size), address_of(q), 0});
        ++reallocations;
      }
    }
    if (op % kStatsEvery == 0) {
      expect_stats_match(*heap, model, op);
      if (HasFailure()) return;
    }
    // Purging gives freed pages back and must change nothing the model sees: every live block
    // keeps its bytes (checked when it is freed or reallocated), and later blocks never overlap.
    if (op % kPurgeEvery == kPurgeEvery - 1) {
      purged_bytes += heap->purge_free_lanes();
      heap->purge_free_runs();
    }
  }
  expect_stats_match(*heap, model, kOperations);

  // Free the rest, checking each pattern one last time.
  while (!model.addresses.empty()) {
    const std::uintptr_t address = model.addresses.back();
    const LiveBlock block = model.erase(address);
    ASSERT_TRUE(patterns.holds(pointer_to(address), block.size, block.id))
        << "block " << block.id << " was overwritten";
    heap->deallocate(pointer_to(address));
  }
  const HeapStats stats = heap->stats();
  EXPECT_EQ(stats.live_blocks, 0u);
  EXPECT_EQ(stats.live_bytes, 0u);
  EXPECT_EQ(stats.large_live_blocks, 0u);
  EXPECT_EQ(stats.huge_live_blocks, 0u);

  // The sequence exercised every operation.
  EXPECT_GT(allocations, kOperations / 4);
  EXPECT_GT(frees, kOperations / 4);
  EXPECT_GT(reallocations, kOperations / 8);
  EXPECT_GT(kept_in_place, 0u);
  EXPECT_GT(purged_bytes, 0u) << "no lane was ever purged";
}

}  // namespace
}  // namespace reheap
