// The public face of WriteTracker's process-checkpoint hand-off (reheap/write_tracking.h).
#include "reheap/write_tracking.h"

#include "../os/write_tracker.h"

namespace reheap {

WriteTrackingCensus suspend_write_tracking() {
  const detail::os::WriteTracker::Census c = detail::os::WriteTracker::suspend_all();
  return {c.trackers, c.ranges, {}};
}

WriteTrackingCensus resume_write_tracking() {
  std::string error;
  const detail::os::WriteTracker::Census c = detail::os::WriteTracker::resume_all(&error);
  return {c.trackers, c.ranges, error};
}

bool write_tracking_suspended() noexcept { return detail::os::WriteTracker::suspended(); }

bool write_tracking_available(std::string* why) { return detail::os::WriteTracker::available(why); }

}  // namespace reheap
