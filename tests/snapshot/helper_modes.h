// Helper modes: this test binary, run again by a test (support.h, spawn_self), restores or saves a
// heap in a fresh process and reports through its exit status (0: as expected) and its output.
//
//   --restore-helper <case> <file> <digest> [<step> <out> [increment]]
//       restores <file> (following its chain), checks that the case's digest is <digest>, that
//       the heap allocates and frees normally afterwards, and, given <step> and <out>, mutates
//       the state by <step> and saves it to <out> for the test to restore: a full snapshot, or
//       with "increment" an increment on top of <file> (Snapshotter::attach).
//   --save-helper <case> <file> <seed>
//       builds the case in a new heap and saves it; prints "digest <hex>".
//   --save-loop <file>
//       restores <file> if it exists (checking it), else builds the "map" case; then, forever,
//       mutates and saves it to <file>, printing "ready" after the first save. The crash test
//       kills it with SIGKILL.
//   --restart-cycle <dir> <spawned> <seed>
//       one life of a restarted service (restart_cycle.h).
//   --held <mode> ...
//       a process of a node with a state directory (held_helper.h).
//   --save-conversion-fixture <file>
//       builds the conversion fixture's heap and saves it (conversion_fixture.h; run by the
//       release and the asan build to regenerate tests/snapshot/fixtures, see its README).
//   --aslr-report
//       prints what main() found: "aslr_off=<0|1> disabled=<0|1> marker=<0|1> why=<text>".
#pragma once

#include <cstdint>
#include <string>

#include "reheap/heap.h"

namespace reheap::snaptest {

// Runs the helper mode argv asks for and returns its exit status, or -1 if argv asks for none.
int run_helper_mode(int argc, char** argv);

// The root of the --save-loop heap: the "map" case with the step it was saved at and its digest
// then, so that a restored file can be checked against itself.
struct LoopRoot {
  void* inner = nullptr;
  std::uint64_t step = 0;
  std::uint64_t digest = 0;
};

// "" if the heap's LoopRoot matches its contents, else what is wrong.
std::string check_loop_root(const Heap& heap);

}  // namespace reheap::snaptest
