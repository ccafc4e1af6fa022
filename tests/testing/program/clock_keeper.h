// ClockKeeper: a reactor with state the runtime does not see coming in. Its second tick keeps
// std::chrono::system_clock::now(), read directly rather than through the runtime, in its heap and
// never sends it; its tick 0 throws, so that a recording of it ends in a crash bundle.
//
// Compiled into replay_program (which records it, REPLAY_PROGRAM_CLOCK=1) and into the test binary
// (which replays that recording: another executable, where the heap's pointers into the program are
// relocated by symbol), so that both hold its code under the same symbols.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "reheap/reactor.h"

namespace replay_test {

// Whether tick 2 reads the clock (true unless set otherwise): a run with it off has no state the
// runtime does not see, so its replay matches the recording to the end.
extern bool g_keep_time;

struct Tick {
  std::uint32_t n;
};

class ClockKeeper : public reheap::Reactor {
 public:
  ClockKeeper();
  void on_tick(const Tick& t);

  const std::vector<std::uint32_t>& ticks() const noexcept { return ticks_; }

 private:
  std::vector<std::uint32_t> ticks_;
  std::chrono::system_clock::time_point kept_{};
};

}  // namespace replay_test
