// The default time and entropy sources (see time_source.h).
#include "reheap/time_source.h"

#include <sys/random.h>

#include <atomic>
#include <cerrno>
#include <system_error>

namespace reheap {
namespace {

class SystemTime final : public TimeSource {
 public:
  std::chrono::system_clock::time_point system_now() override { return std::chrono::system_clock::now(); }
  std::chrono::steady_clock::time_point steady_now() override { return std::chrono::steady_clock::now(); }
};

class SystemEntropy final : public EntropySource {
 public:
  void fill(std::uint64_t out[2]) override {
    auto* bytes = reinterpret_cast<unsigned char*>(out);
    std::size_t done = 0;
    while (done < 2 * sizeof(std::uint64_t)) {
      const ssize_t n = ::getrandom(bytes + done, 2 * sizeof(std::uint64_t) - done, 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw std::system_error(errno, std::generic_category(), "reheap: getrandom for a reactor's seed");
      }
      done += static_cast<std::size_t>(n);
    }
  }
};

class SeededEntropy final : public EntropySource {
 public:
  explicit SeededEntropy(std::uint64_t seed) : state_(seed) {}
  void fill(std::uint64_t out[2]) override {
    out[0] = next();
    out[1] = next();
  }

 private:
  std::uint64_t next() noexcept {
    // splitmix64 (Vigna), on a shared counter: thread-safe, one stream for all callers.
    std::uint64_t z = state_.fetch_add(0x9E3779B97F4A7C15ull, std::memory_order_relaxed) + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::atomic<std::uint64_t> state_;
};

}  // namespace

std::shared_ptr<TimeSource> TimeSource::system() {
  static const std::shared_ptr<TimeSource> instance = std::make_shared<SystemTime>();
  return instance;
}

std::shared_ptr<EntropySource> EntropySource::system() {
  static const std::shared_ptr<EntropySource> instance = std::make_shared<SystemEntropy>();
  return instance;
}

std::shared_ptr<EntropySource> EntropySource::seeded(std::uint64_t seed) {
  return std::make_shared<SeededEntropy>(seed);
}

}  // namespace reheap
