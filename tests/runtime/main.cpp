// The runtime suite's main: turns ASLR off first (re-executing the binary) so that a child process
// can restore a reactor snapshot at the same addresses, then runs a helper mode if argv asks for
// one (`--helper <name> ...`, registered by the test files with RegisterHelper), or the tests.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "reheap/aslr.h"
#include "runtime_support.h"

int main(int argc, char** argv) {
  reheap::rttest::AslrState& aslr = reheap::rttest::aslr_state();
  aslr.off = reheap::reexec_without_aslr(argc, argv, &aslr.why);
  const int helper_status = reheap::rttest::run_helper_mode(argc, argv);
  if (helper_status >= 0) return helper_status;
  if (!aslr.off) {
    std::fprintf(stderr,
                 "warning: ASLR is on (%s); cross-process restore tests fail, or skip where the "
                 "machine forbids personality(ADDR_NO_RANDOMIZE)\n",
                 aslr.why.c_str());
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
