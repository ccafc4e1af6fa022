// ASLR: reexec_without_aslr() turns address randomisation off by executing the program again, with
// its arguments and environment, and tells the truth: it returns true only when the process then
// runs without ASLR, removes its loop-guard marker so that the programs it starts are not misled,
// and reports failure (with a reason) rather than executing itself in a loop.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "reheap/aslr.h"
#include "support.h"

namespace reheap::snaptest {
namespace {

bool randomisation_on_system_wide() {
  std::ifstream knob("/proc/sys/kernel/randomize_va_space");
  int value = 0;
  return knob >> value && value != 0;
}

TEST(SnapshotAslr, TestProcessKnowsWhetherItRunsWithoutAslr) {
  EXPECT_EQ(layout_stable(), aslr_disabled());
  EXPECT_EQ(std::getenv("REHEAP_ASLR_REEXEC"), nullptr) << "the loop-guard marker leaks to children";
}

TEST(SnapshotAslr, ProcessStartedWithAslrReexecutesWithoutIt) {
  if (!randomisation_on_system_wide()) {
    GTEST_SKIP() << "this machine has ASLR off system-wide (kernel.randomize_va_space = 0)";
  }
  const ChildResult child = run_self({"--aslr-report"}, {.randomize = true});
  ASSERT_TRUE(child.succeeded()) << child.describe();
  EXPECT_EQ(child.output.rfind("aslr_off=1 disabled=1 marker=0", 0), 0u) << child.output;
}

TEST(SnapshotAslr, StaleMarkerWithAslrOnIsReportedNotTrusted) {
  if (!randomisation_on_system_wide()) {
    GTEST_SKIP() << "this machine has ASLR off system-wide (kernel.randomize_va_space = 0)";
  }
  const ChildResult child = run_self({"--aslr-report"},
                                     {.randomize = true, .extra_env = {"REHEAP_ASLR_REEXEC=1"}});
  ASSERT_TRUE(child.succeeded()) << child.describe();
  EXPECT_EQ(child.output.rfind("aslr_off=0 disabled=0 marker=0 why=", 0), 0u) << child.output;
  EXPECT_GT(child.output.size(), std::string("aslr_off=0 disabled=0 marker=0 why=\n").size())
      << "a failure comes with a reason";
}

}  // namespace
}  // namespace reheap::snaptest
