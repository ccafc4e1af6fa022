// TimerState: one of a reactor's live timers as the runtime keeps it (timer_service.h), by value:
// what a restart needs to bring back a timer that the failing event cancelled.
#pragma once

#include <cstdint>

#include "reheap/event.h"

namespace reheap::detail {

struct TimerState {
  TimerId id = 0;
  std::uint64_t due_ns = 0;     // when it fires next, in uv_hrtime() nanoseconds
  std::uint64_t period_ms = 0;  // 0: one-shot
};

}  // namespace reheap::detail
