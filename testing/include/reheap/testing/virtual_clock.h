// VirtualClock and SeedStream: the answers a test host gives a reactor instead of the machine's.
//
// A reactor reads time only through Reactor::now()/steady_now() and randomness only through
// Reactor::random(), both answered by the host of the event being delivered (reactor_host.h).
// A test host answers them from these two objects, so that a test decides what time it is and
// which random numbers come out, and two runs of one test are the same run.
//
// VirtualClock: a system and a steady time that move only when the test moves them (advance_to).
// Both start at fixed epochs, not at the machine's time, so a test that prints a timestamp prints
// the same one every day. The clock never goes backwards: advance_to an earlier time is refused.
//
// SeedStream: an endless, deterministic sequence of 64-bit words from one seed (SplitMix64, which
// turns even the seeds 0, 1, 2, ... into unrelated streams). Each request for a reactor's entropy
// takes the next two words, so the reactors' random sequences depend only on the seed and on the
// order in which the reactors first call random(), which the test runtime makes deterministic.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>

namespace reheap::testing {

class VirtualClock {
 public:
  // 2025-01-01T00:00:00Z: a fixed, recognisable instant rather than the Unix epoch, whose zero
  // reactors may treat as "never".
  static constexpr std::chrono::system_clock::time_point kSystemEpoch{std::chrono::seconds(1'735'689'600)};
  // One hour after the steady clock's zero, for the same reason.
  static constexpr std::chrono::steady_clock::time_point kSteadyEpoch{std::chrono::hours(1)};

  VirtualClock() noexcept = default;
  VirtualClock(std::chrono::system_clock::time_point system_epoch,
               std::chrono::steady_clock::time_point steady_epoch) noexcept
      : system_epoch_(system_epoch), steady_epoch_(steady_epoch) {}

  // Time elapsed since the epochs: the one quantity the clock keeps.
  std::chrono::nanoseconds elapsed() const noexcept { return elapsed_; }
  std::chrono::system_clock::time_point system_now() const noexcept {
    return system_epoch_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(elapsed_);
  }
  std::chrono::steady_clock::time_point steady_now() const noexcept {
    return steady_epoch_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(elapsed_);
  }

  // Moves the clock to `elapsed` since the epochs. Throws std::logic_error if that is earlier.
  void advance_to(std::chrono::nanoseconds elapsed) {
    if (elapsed < elapsed_) throw std::logic_error("reheap::testing::VirtualClock: time cannot go backwards");
    elapsed_ = elapsed;
  }

 private:
  std::chrono::system_clock::time_point system_epoch_ = kSystemEpoch;
  std::chrono::steady_clock::time_point steady_epoch_ = kSteadyEpoch;
  std::chrono::nanoseconds elapsed_{0};
};

class SeedStream {
 public:
  explicit SeedStream(std::uint64_t seed) noexcept : state_(seed) {}

  std::uint64_t next() noexcept {
    // SplitMix64 (Steele, Lea and Flood): a Weyl sequence through a bijective mixer.
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // A value in [0, n), n > 0. The modulo bias is irrelevant for choosing among a few messages.
  std::uint64_t below(std::uint64_t n) noexcept { return next() % n; }

 private:
  std::uint64_t state_;
};

}  // namespace reheap::testing
