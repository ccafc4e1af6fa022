// SimulatedCheckpoint: a checkpoint engine that dumps nothing, for tests of the coordination.
//
// Runtime::checkpoint_process with this engine does everything it does with CRIU (the barrier,
// timers parked and re-armed, the TCP policy, the userfaultfd hand-off, on_restored) except the
// dump: instead, dump() observes the process as a dump would meet it (how many workers are parked,
// whether a userfaultfd is still open, whether tracking is suspended), runs the test's callback,
// waits `pause`, and returns the outcome it was told to, so that a test can also walk the restored
// path in the same process.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <vector>

#include "reheap/checkpoint_engine.h"

namespace reheap {

class SimulatedCheckpoint : public CheckpointEngine {
 public:
  struct Options {
    DumpOutcome outcome = DumpOutcome::kDumped;
    std::chrono::milliseconds pause{0};
    bool tcp_repair = false;        // what support() claims
    bool fail = false;              // dump() throws CheckpointError, as a failed dump would
    std::function<void()> during{};  // runs inside dump(), on the checkpointing thread
  };

  // What one dump() met.
  struct Observation {
    int workers = 0;
    bool tracking_suspended = false;
    int userfaultfds_open = 0;   // descriptors of this process that are userfaultfds
    bool keep_established_tcp = false;
  };

  SimulatedCheckpoint() = default;
  explicit SimulatedCheckpoint(Options options) : options_(std::move(options)) {}

  std::string name() const override { return "simulated"; }
  CheckpointSupport support() override;
  DumpOutcome dump(const DumpRequest& request) override;

  std::vector<Observation> observations() const;

  // Descriptors of this process whose /proc/self/fd link names `kind` (e.g. "userfaultfd").
  static int open_descriptors(const char* kind);

 private:
  Options options_;
  mutable std::mutex mutex_;
  std::vector<Observation> observations_;
};

}  // namespace reheap
