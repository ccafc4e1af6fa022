// The snapshot suite's main: turns ASLR off first (re-executing the binary), so that the helper
// processes the tests spawn load the program at the same addresses as the test process, and a
// heap holding pointers into the program (vtables, std::function targets) can move between them.
// Then either runs the helper mode argv asks for (helper_modes.h) or the tests.
//
// REHEAP_TEST_KEEP_ASLR=1 in the environment skips the re-execution: the layout-mismatch test
// uses it to save a snapshot from a process with ASLR on.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "helper_modes.h"
#include "reheap/aslr.h"
#include "support.h"

int main(int argc, char** argv) {
  std::string why;
  bool aslr_off = false;
  if (std::getenv("REHEAP_TEST_KEEP_ASLR") != nullptr) {
    aslr_off = reheap::aslr_disabled();
    if (!aslr_off) why = "REHEAP_TEST_KEEP_ASLR is set";
  } else {
    aslr_off = reheap::reexec_without_aslr(argc, argv, &why);
  }
  reheap::snaptest::set_aslr_state(aslr_off, why);

  const int helper_status = reheap::snaptest::run_helper_mode(argc, argv);
  if (helper_status >= 0) return helper_status;

  if (!aslr_off) {
    std::fprintf(stderr,
                 "warning: ASLR is on (%s); tests that restore a heap in another process fail, or "
                 "skip where the machine forbids personality(ADDR_NO_RANDOMIZE)\n",
                 why.c_str());
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
