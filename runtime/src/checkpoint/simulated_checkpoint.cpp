// SimulatedCheckpoint (simulated_checkpoint.h).
#include "reheap/simulated_checkpoint.h"

#include <unistd.h>

#include <climits>
#include <cstring>
#include <filesystem>
#include <thread>

#include "reheap/write_tracking.h"

namespace reheap {

CheckpointSupport SimulatedCheckpoint::support() {
  CheckpointSupport s;
  s.available = true;
  s.version = "simulated";
  s.tcp_repair = options_.tcp_repair;
  return s;
}

int SimulatedCheckpoint::open_descriptors(const char* kind) {
  int found = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    char target[PATH_MAX];
    const ssize_t n = ::readlink(entry.path().c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (std::strstr(target, kind) != nullptr) ++found;
  }
  return found;
}

DumpOutcome SimulatedCheckpoint::dump(const DumpRequest& request) {
  Observation seen;
  seen.workers = request.workers;
  seen.tracking_suspended = write_tracking_suspended();
  seen.userfaultfds_open = open_descriptors("userfaultfd");
  seen.keep_established_tcp = request.keep_established_tcp;
  {
    const std::lock_guard lock(mutex_);
    observations_.push_back(seen);
  }
  if (options_.during) options_.during();
  if (options_.pause.count() > 0) std::this_thread::sleep_for(options_.pause);
  if (options_.fail) throw CheckpointError("simulated dump failure");
  return options_.outcome;
}

std::vector<SimulatedCheckpoint::Observation> SimulatedCheckpoint::observations() const {
  const std::lock_guard lock(mutex_);
  return observations_;
}

}  // namespace reheap
