// TimeSource and EntropySource: where a runtime's reactors get the time and randomness.
//
// A reactor reads time only through Reactor::now() / steady_now() and randomness only through
// Reactor::random(): both are answers of the runtime (reactor_host.h), so a recording holds
// them and a replay gives the same ones back. Reading std::chrono clocks, /dev/urandom or
// std::random_device directly inside a hook works, but the replay of such a reactor diverges
// (DETERMINISM.md). RuntimeConfig::time and ::entropy replace the sources, e.g. with a virtual
// clock in tests; the defaults read the system clocks and getrandom(2).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

namespace reheap {

class TimeSource {
 public:
  virtual ~TimeSource() = default;
  // Called from worker threads concurrently: must be thread-safe.
  virtual std::chrono::system_clock::time_point system_now() = 0;
  virtual std::chrono::steady_clock::time_point steady_now() = 0;

  // std::chrono::system_clock and steady_clock.
  static std::shared_ptr<TimeSource> system();
};

class EntropySource {
 public:
  virtual ~EntropySource() = default;
  // Fills `out` with 128 random bits. Thread-safe.
  virtual void fill(std::uint64_t out[2]) = 0;

  static std::shared_ptr<EntropySource> system();  // getrandom(2)
  // A deterministic stream from `seed` (splitmix64), for tests.
  static std::shared_ptr<EntropySource> seeded(std::uint64_t seed);
};

}  // namespace reheap
