// The adversarial suite's main: GoogleTest, unless this process is a child that a test started
// to run one scenario in a fresh process (review_regressions_test.cpp).
#include <gtest/gtest.h>

extern "C" int reheap_adversarial_child(int argc, char** argv);

int main(int argc, char** argv) {
  const int child = reheap_adversarial_child(argc, argv);
  if (child >= 0) return child;
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
