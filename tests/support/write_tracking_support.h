// When a test of increments may skip: only where this machine cannot track writes.
//
// Incremental snapshots need the kernel to track a heap's writes (userfaultfd's asynchronous write
// protection and PAGEMAP_SCAN, Linux 6.7). Whether it can is the process-wide probe's answer
// (reheap::write_tracking_available), not a Snapshotter's: a Snapshotter that tracks nothing, or
// an increment that falls back to a full save, on a machine that can track writes is a failure of
// what the test specifies, and the test fails saying so.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "reheap/write_tracking.h"

// Skips the test, naming why, where this machine cannot track writes.
#define REQUIRE_WRITE_TRACKING()                                                                 \
  do {                                                                                           \
    std::string why_;                                                                            \
    if (!::reheap::write_tracking_available(&why_)) {                                            \
      GTEST_SKIP() << "this machine cannot track writes (userfaultfd write protection with "     \
                      "PAGEMAP_SCAN, Linux 6.7): "                                               \
                   << why_;                                                                      \
    }                                                                                            \
  } while (false)

// The same, and then fails unless `snapshotter` (a reheap::Snapshotter) tracks its heap's writes.
#define REQUIRE_TRACKING_BY(snapshotter)                                                         \
  do {                                                                                           \
    REQUIRE_WRITE_TRACKING();                                                                    \
    ASSERT_NE((snapshotter).tracking().rfind("none", 0), 0u)                                     \
        << "the Snapshotter tracks no writes on a machine that can: " << (snapshotter).tracking(); \
  } while (false)
