// Clocks for the allocator benchmarks: the TSC for cycles, CLOCK_MONOTONIC for nanoseconds.
//
// The TSC counts at a constant rate (constant_tsc, nonstop_tsc) whatever the core's clock does,
// so "cycles" here are TSC ticks, not core cycles: on a core running above the TSC rate a pair
// costs more core cycles than TSC ticks, below it fewer. perf's cycle counter, which would count
// core cycles, is not available on the machines we run on (virtual machines without a PMU).
//
// Both clocks are read with fences around rdtsc so that the timed region neither starts before
// the instructions ahead of it retire nor ends before its own last instructions do.
#pragma once

#include <x86intrin.h>

#include <cstdint>
#include <ctime>

namespace bench {

inline std::uint64_t tsc_now() noexcept {
  _mm_lfence();
  const std::uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
}

inline std::uint64_t monotonic_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// A start point on both clocks; elapsed() gives both spans at once.
struct Stopwatch {
  std::uint64_t ns0 = monotonic_ns();
  std::uint64_t tsc0 = tsc_now();

  struct Span {
    std::uint64_t ns;
    std::uint64_t tsc;
  };
  Span elapsed() const noexcept {
    const std::uint64_t tsc1 = tsc_now();
    const std::uint64_t ns1 = monotonic_ns();
    return {ns1 - ns0, tsc1 - tsc0};
  }
};

// TSC ticks per second, measured against CLOCK_MONOTONIC over `ms` milliseconds of busy waiting.
inline double estimate_tsc_hz(unsigned ms = 200) noexcept {
  const Stopwatch sw;
  Stopwatch::Span span{};
  do {
    span = sw.elapsed();
  } while (span.ns < static_cast<std::uint64_t>(ms) * 1'000'000u);
  return static_cast<double>(span.tsc) * 1e9 / static_cast<double>(span.ns);
}

// Makes `p` opaque to the optimizer: it may have been read and stored anywhere, so neither the
// allocation that produced it nor the free that follows may be elided or merged.
inline void escape(void* p) noexcept { asm volatile("" : : "r"(p) : "memory"); }

}  // namespace bench
