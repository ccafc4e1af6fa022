#include "alloc_trace.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

namespace bench {

void* map_pages(std::size_t bytes) {
  if (bytes == 0) bytes = 1;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "alloc_bench: mmap of %zu bytes failed\n", bytes);
    std::abort();
  }
  return p;
}

void unmap_pages(void* p, std::size_t bytes) noexcept {
  if (bytes == 0) bytes = 1;
  munmap(p, bytes);
}

namespace {

// SplitMix64 (Steele, Lea and Flood, 2014): one 64-bit state, a Weyl increment and a mixing
// function; plenty for drawing sizes and lifetimes, and identical everywhere.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double unit() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in (0, 1].
  double unit_open_low() noexcept { return static_cast<double>((next() >> 11) + 1) * 0x1.0p-53; }

 private:
  std::uint64_t state_;
};

// A pending free: (the step at which the block dies) << 24 | slot. Ordering the packed value
// orders by step and breaks ties by slot, so the order of frees within a step is deterministic.
constexpr unsigned kSlotBits = 24;
constexpr std::uint64_t kSlotMask = (std::uint64_t{1} << kSlotBits) - 1;

}  // namespace

Trace build_trace(const TraceParams& params) {
  const double lo = static_cast<double>(params.min_size);
  const double hi = static_cast<double>(params.max_size);
  const double log_range = std::log(hi / lo);
  const double alpha = params.pareto_shape;
  const double cap = params.lifetime_cap;

  // Means of the two distributions: log-uniform sizes, (b - a) / ln(b / a); a Pareto variable of
  // scale 1 truncated at `cap`, the integral of its survival function 1 + (cap^(1-a) - 1) / (1-a).
  const double mean_size = (hi - lo) / log_range;
  const double mean_unit_lifetime = 1.0 + (std::pow(cap, 1.0 - alpha) - 1.0) / (1.0 - alpha);
  const double mean_lifetime = static_cast<double>(params.target_live_bytes) / mean_size;

  Trace trace;
  trace.lifetime_scale = mean_lifetime / mean_unit_lifetime;
  trace.lifetime_cap_steps =
      static_cast<std::size_t>(std::ceil(cap * std::max(trace.lifetime_scale, 1.0)));
  trace.warmup_steps = std::max(params.min_warmup_steps, trace.lifetime_cap_steps);

  const std::size_t total_steps = trace.warmup_steps + params.timed_steps;
  trace.events = MmapArray<Event>(2 * total_steps);
  // Live blocks never outnumber steps; these arrays only reserve address space up front.
  MmapArray<std::uint64_t> pending(total_steps);    // a binary min-heap of pending frees
  MmapArray<std::uint32_t> free_slots(total_steps);  // a LIFO stack of unused slots
  trace.slot_sizes = MmapArray<std::uint32_t>(total_steps);
  std::uint32_t* const slot_size = trace.slot_sizes.data();
  std::size_t num_pending = 0;
  std::size_t num_free_slots = 0;
  std::uint32_t num_slots = 0;

  Random random(params.seed);
  std::size_t n = 0;
  std::size_t live_bytes = 0;
  std::size_t live_blocks = 0;
  double size_sum = 0;
  long double timed_live_sum = 0;
  const auto later = std::greater<std::uint64_t>();

  for (std::size_t step = 0; step < total_steps; ++step) {
    if (step == trace.warmup_steps) trace.first_timed_event = n;
    const bool timed = step >= trace.warmup_steps;

    while (num_pending > 0 && (pending[0] >> kSlotBits) == step) {
      const auto slot = static_cast<std::uint32_t>(pending[0] & kSlotMask);
      std::pop_heap(pending.data(), pending.data() + num_pending, later);
      --num_pending;
      trace.events[n++] = Event{slot, slot_size[slot] | kFreeBit};
      live_bytes -= slot_size[slot];
      --live_blocks;
      free_slots[num_free_slots++] = slot;
      if (timed) ++trace.timed_frees;
    }

    const double drawn_size = std::floor(lo * std::exp(random.unit() * log_range));
    const auto size = static_cast<std::uint32_t>(std::clamp(drawn_size, lo, hi));
    const double drawn_life =
        trace.lifetime_scale * std::pow(random.unit_open_low(), -1.0 / alpha);
    const double life = std::min(drawn_life, cap * trace.lifetime_scale);
    const auto life_steps = static_cast<std::size_t>(std::max(1.0, std::round(life)));

    std::uint32_t slot = 0;
    if (num_free_slots > 0) {
      slot = free_slots[--num_free_slots];
    } else {
      slot = num_slots++;
      if (slot > kSlotMask) {
        std::fprintf(stderr, "alloc_bench: more than %llu live blocks; lower the target\n",
                     static_cast<unsigned long long>(kSlotMask));
        std::abort();
      }
    }
    slot_size[slot] = size;
    trace.events[n++] = Event{slot, size};
    pending[num_pending++] = (static_cast<std::uint64_t>(step + life_steps) << kSlotBits) | slot;
    std::push_heap(pending.data(), pending.data() + num_pending, later);

    live_bytes += size;
    ++live_blocks;
    size_sum += size;
    trace.peak_live_bytes = std::max(trace.peak_live_bytes, live_bytes);
    trace.peak_live_blocks = std::max(trace.peak_live_blocks, live_blocks);
    if (!timed) trace.warmup_peak_live_bytes = trace.peak_live_bytes;
    if (timed) {
      ++trace.timed_allocs;
      timed_live_sum += static_cast<long double>(live_bytes);
    }
  }

  trace.num_events = n;
  // FNV-1a over the events' 64-bit images, so that runs can show they replayed the same trace.
  std::uint64_t checksum = 0xCBF29CE484222325u;
  for (std::size_t i = 0; i < n; ++i) {
    checksum ^= (static_cast<std::uint64_t>(trace.events[i].slot) << 32) | trace.events[i].word;
    checksum *= 0x100000001B3u;
  }
  trace.checksum = checksum;
  trace.num_slots = num_slots;
  trace.mean_size = size_sum / static_cast<double>(total_steps);
  trace.mean_live_bytes =
      params.timed_steps > 0
          ? static_cast<double>(timed_live_sum / static_cast<long double>(params.timed_steps))
          : 0.0;
  return trace;
}

}  // namespace bench
