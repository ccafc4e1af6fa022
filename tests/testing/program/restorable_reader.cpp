// `restorable_reader RECORDING`: replays a Tally's recording (restorable_recorder) and prints its
// total, or the error that refused it (exit 1). It includes the class but never constructs one
// and does not write REHEAP_RESTORABLE(restorable_test::Tally), so that it shows what a program
// without that line gets: restorable_test.cpp reads the same recording with the line.
#include <cstdio>
#include <exception>

#include "reheap/testing/replay.h"
#include "restorable_tally.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: restorable_reader RECORDING\n");
    return 2;
  }
  try {
    reheap::testing::Replay replay = reheap::testing::Replay::open(argv[1]);
    replay.run();
    std::printf("total %d\n", replay.reactor<restorable_test::Tally>().total());
  } catch (const std::exception& e) {
    std::printf("refused: %s\n", e.what());
    return 1;
  }
  return 0;
}
