// FuzzRng: the mutator's source of choices. Seeded from the seed libFuzzer passes to the custom
// mutator, so that a mutation is a function of (input, seed) and libFuzzer can replay it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace reheap_fuzz {

class FuzzRng {
 public:
  explicit FuzzRng(std::uint64_t seed) noexcept : state_(seed) {}

  // splitmix64: one add, two multiplies; good enough to pick among a few dozen choices.
  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); 0 when n == 0, so callers need not test for empty choices.
  std::size_t below(std::size_t n) noexcept { return n == 0 ? 0 : static_cast<std::size_t>(next() % n); }
  // True with probability percent / 100.
  bool chance(unsigned percent) noexcept { return below(100) < percent; }

 private:
  std::uint64_t state_;
};

}  // namespace reheap_fuzz
