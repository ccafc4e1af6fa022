// How long a worker sleeps, after a turn that ran reactors, before it purges the freed memory of
// the heaps living on it (Worker::on_purge; zone.h, "Retention"): half a second.
//
// A process-wide setting, read each time a worker starts its purge timer. It exists for tests: a
// test of the purge shortens it, so that it waits for purges (RuntimeStats::idle_purges) instead
// of for half a second, and so that a purge that should not come would come while the test looks.
// Not part of the public API; programs have no reason to change it.
#pragma once

#include <chrono>

namespace reheap::detail {

inline constexpr std::chrono::milliseconds kDefaultIdlePurgeDelay{500};

std::chrono::milliseconds idle_purge_delay() noexcept;

// Sets the delay for the purge timers started from now on; returns the delay it replaces.
std::chrono::milliseconds set_idle_purge_delay(std::chrono::milliseconds delay) noexcept;

}  // namespace reheap::detail
