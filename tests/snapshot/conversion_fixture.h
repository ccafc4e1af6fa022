// The heap of the committed conversion fixtures (tests/snapshot/fixtures/README.md): one saved by
// a release build, one by a checked build, so that each build's test binary can restore the
// other's (checked_conversion_test.cpp).
//
// The heap holds data only, no pointer into the program, so it restores in any build of any
// program whose zone has the same base and size (RestoreOptions{.layout = LayoutCheck::kNone}).
// Its root describes it: live blocks of several size classes, page runs and a huge block, each
// filled with a pattern of its own; and the blocks freed before the save, in the order they were
// freed (so the last of each class heads its free list). The pattern is defined here, not shared
// with cases.h, because committed files must keep matching it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "reheap/heap.h"

namespace reheap::snaptest {

struct FixtureBlock {
  void* p = nullptr;
  std::uint64_t size = 0;  // bytes asked for
  std::uint64_t seed = 0;  // of its pattern
};

inline constexpr std::uint64_t kFixtureMagic = 0x5845'5446'5445'4852;  // "RHETFTEX"
inline constexpr std::size_t kFixtureLive = 64;
inline constexpr std::size_t kFixtureFreed = 64;

struct FixtureRoot {
  std::uint64_t magic = kFixtureMagic;
  std::uint64_t checked_build = 0;  // 1 if saved by a build with REHEAP_CHECKS
  std::uint64_t live_count = 0;
  std::uint64_t freed_count = 0;
  FixtureBlock live[kFixtureLive];
  FixtureBlock freed[kFixtureFreed];  // in the order freed; `p` is no longer live
};

// Builds the fixture's contents in a new heap and saves it to `file` (a full snapshot).
void save_conversion_fixture(const std::filesystem::path& file);

// "" if `heap`'s root is a fixture whose live blocks hold their patterns, else what is wrong.
std::string check_conversion_fixture(const Heap& heap);

// Fills and checks a block's pattern: every word of a block up to two pages, the first and last
// page of a bigger one (whose pages between stay zero, which keeps the files small).
void fill_fixture_pattern(void* p, std::size_t size, std::uint64_t seed);
bool fixture_pattern_intact(const void* p, std::size_t size, std::uint64_t seed);

// The committed fixture saved by the other build flavour than this test binary's, and this one's.
std::filesystem::path other_build_fixture();
std::filesystem::path this_build_fixture();

}  // namespace reheap::snaptest
