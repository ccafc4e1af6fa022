// ClockKeeper (see clock_keeper.h).
#include "clock_keeper.h"

#include <stdexcept>

namespace replay_test {

bool g_keep_time = true;

ClockKeeper::ClockKeeper() { handle<&ClockKeeper::on_tick>(); }

void ClockKeeper::on_tick(const Tick& t) {
  if (t.n == 0) throw std::runtime_error("tick 0 ends the recording");
  ticks_.push_back(t.n);
  // Deliberately not the runtime's clock: a replay reads another time, and only the heap shows it.
  if (t.n == 2 && g_keep_time) kept_ = std::chrono::system_clock::now();
}

}  // namespace replay_test
