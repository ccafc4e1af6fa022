// The operation trace of the realistic workload: which block to allocate or free, in which order.
//
// Data model. The workload is a sequence of steps; each step first frees the blocks whose lifetime
// ends at it, then allocates one new block. A block's size is drawn log-uniformly from
// [min_size, max_size] (probability proportional to 1/size), its lifetime (in steps) from a Pareto
// distribution of shape `pareto_shape`, truncated at `lifetime_cap` times the Pareto scale. The
// scale is chosen from the two means so that, by Little's law, the steady-state live bytes equal
// `target_live_bytes` on average. Every live block has a slot (a small integer, reused LIFO), and
// each event names its slot and the block's size, so a replay needs only an array of pointers
// indexed by slot and never searches anything.
//
// The trace is built before anything is timed, from a fixed seed, by a generator of our own
// (SplitMix64 and closed-form inverse CDFs), so the same seed yields the same trace for every
// allocator, every build and every standard library. Its memory comes straight from mmap, never
// from the allocator under test: building it leaves no freed blocks behind that the allocator
// could later reuse without growing the process's RSS.
//
// Steps [0, warmup_steps) are replayed untimed; warmup_steps is at least the lifetime cap, so the
// timed steps start in the steady state (every block born before the trace began would be dead).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace bench {

// Anonymous private pages, reserved without swap accounting; pages never touched cost no RSS.
void* map_pages(std::size_t bytes);
void unmap_pages(void* p, std::size_t bytes) noexcept;

template <class T>
class MmapArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  MmapArray() = default;
  explicit MmapArray(std::size_t capacity)
      : data_(static_cast<T*>(map_pages(capacity * sizeof(T)))), capacity_(capacity) {}
  MmapArray(MmapArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}
  MmapArray& operator=(MmapArray&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  ~MmapArray() { release(); }

  T* data() const noexcept { return data_; }
  T& operator[](std::size_t i) const noexcept { return data_[i]; }
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  void release() noexcept {
    if (data_ != nullptr) unmap_pages(data_, capacity_ * sizeof(T));
    data_ = nullptr;
    capacity_ = 0;
  }
  T* data_ = nullptr;
  std::size_t capacity_ = 0;
};

// One allocation or one free. `word` holds the block size, with kFreeBit set for a free.
struct Event {
  std::uint32_t slot;
  std::uint32_t word;
};
inline constexpr std::uint32_t kFreeBit = 1u << 31;
inline constexpr std::uint32_t kSizeMask = kFreeBit - 1;

struct TraceParams {
  std::uint64_t seed = 1;
  std::size_t target_live_bytes = 4u << 20;
  std::size_t timed_steps = 1'000'000;   // allocations in the timed region
  std::size_t min_size = 8;
  std::size_t max_size = 1u << 20;
  double pareto_shape = 1.3;
  double lifetime_cap = 1000.0;          // in units of the Pareto scale
  std::size_t min_warmup_steps = 200'000;
};

struct Trace {
  MmapArray<Event> events;
  std::size_t num_events = 0;
  std::size_t first_timed_event = 0;     // events before it are the untimed warm-up
  std::size_t timed_allocs = 0;
  std::size_t timed_frees = 0;
  std::uint32_t num_slots = 0;           // slots 0 .. num_slots-1 are used
  // The size of the block last allocated in each slot: of the blocks still live at the end.
  MmapArray<std::uint32_t> slot_sizes;
  std::size_t warmup_steps = 0;
  double lifetime_scale = 0;             // Pareto scale, in steps
  std::size_t lifetime_cap_steps = 0;
  double mean_size = 0;                  // over all allocations of the trace
  std::size_t peak_live_bytes = 0;       // requested bytes, over warm-up and timed steps
  std::size_t warmup_peak_live_bytes = 0;  // requested bytes, over the warm-up steps only
  std::size_t peak_live_blocks = 0;
  double mean_live_bytes = 0;            // average over the timed steps
  std::uint64_t checksum = 0;            // of all events: equal checksums, equal traces
};

Trace build_trace(const TraceParams& params);

}  // namespace bench
