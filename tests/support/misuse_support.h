// What the misuse tests of several suites share: whether this build aborts on misuse
// (REHEAP_TEST_CHECKS, set by tests/CMakeLists.txt for REHEAP_CHECKS builds), a way to hide a
// pointer's origin from the compiler, and the base of death tests that run only in such builds.
//
// A test that means something in one kind of build only is compiled in that build only
// (`#if defined(REHEAP_TEST_CHECKS)` or its negation), so that the other build does not register
// it and count it as skipped: a skip is for a machine that lacks something.
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

#if defined(REHEAP_TEST_CHECKS)
// Death tests of misuse, which exist only where misuse aborts (elsewhere it is ignored and
// counted). The threadsafe style re-runs the test in a fresh process, so the zone and heaps start
// clean.
class CheckedDeathTest : public testing::Test {
 protected:
  void SetUp() override { testing::FLAGS_gtest_death_test_style = "threadsafe"; }
};
#endif

}  // namespace reheap::testsupport
