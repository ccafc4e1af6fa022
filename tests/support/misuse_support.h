// What the misuse tests of several suites share: whether this build aborts on misuse
// (REHEAP_TEST_CHECKS, set by tests/CMakeLists.txt for REHEAP_CHECKS builds), a way to hide a
// pointer's origin from the compiler, and the base of death tests that run only in such builds.
#pragma once

#include <gtest/gtest.h>

namespace reheap::testsupport {

#if defined(REHEAP_TEST_CHECKS)
inline constexpr bool kChecked = true;
#else
inline constexpr bool kChecked = false;
#endif

// Hides where a pointer came from, so that the compiler neither warns about the deliberate misuse
// nor optimizes it away.
[[gnu::noinline]] inline void* launder(void* p) {
  asm volatile("" : "+r"(p));
  return p;
}

// Death tests of misuse: skipped where misuse is ignored (and counted) instead of aborting. The
// threadsafe style re-runs the test in a fresh process, so the zone and heaps start clean.
class CheckedDeathTest : public testing::Test {
 protected:
  void SetUp() override {
    if (!kChecked) GTEST_SKIP() << "misuse aborts only in builds with REHEAP_CHECKS";
    testing::FLAGS_gtest_death_test_style = "threadsafe";
  }
};

}  // namespace reheap::testsupport
