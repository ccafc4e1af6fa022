// CellSupervision: what went wrong with a reactor during its current event, and the restarts its
// SupervisionPolicy allowed so far (supervisor.h acts on it after the event).
#pragma once

#include <chrono>
#include <deque>
#include <string>

#include "reheap/supervision.h"

namespace reheap::detail {

struct CellSupervision {
  bool failed = false;  // a hook threw during the current event
  FailureKind kind = FailureKind::kException;
  std::string what;
  std::string hook;
  std::string exception_type;  // the thrown object's C++ type ("" if not a std::exception)
  std::string reactor_type;    // the failed reactor's C++ type
  std::deque<std::chrono::steady_clock::time_point> restart_times;  // within restart_window

  // As a new one, in place: a fresh std::deque allocates (and the old one frees) its buffers,
  // which a short-lived reactor's teardown would pay every time.
  void reset() noexcept {
    failed = false;
    kind = FailureKind::kException;
    what.clear();
    hook.clear();
    exception_type.clear();
    reactor_type.clear();
    restart_times.clear();
  }
};

}  // namespace reheap::detail
