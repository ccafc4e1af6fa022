// A bounded single-producer, single-consumer ring of pointers: how the benchmark hands messages
// from one thread to the other, the way a reactor's mailbox would.
//
// Indices are published in batches (every kBatch items, and whenever a side would otherwise
// wait), so the ring itself costs a fraction of an atomic store per message and the allocator's
// cost dominates. Each side keeps its own indices and a cached copy of the other side's on a
// cache line of its own; the two published indices each have a line, and so do the slots.
#pragma once

#include <x86intrin.h>
#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace msgbench {

class SpscRing {
 public:
  static constexpr std::size_t kCapacity = 1024;
  static constexpr std::size_t kBatch = 32;
  static_assert((kCapacity & (kCapacity - 1)) == 0 && kBatch < kCapacity);

  // ---- producer side ----
  void push(void* p) noexcept {
    if (prod_.tail - prod_.head_seen == kCapacity) wait_for_space();
    slots_[prod_.tail & (kCapacity - 1)] = p;
    if (++prod_.tail - prod_.published >= kBatch) flush();
  }
  void flush() noexcept {
    tail_.store(prod_.tail, std::memory_order_release);
    prod_.published = prod_.tail;
  }

  // ---- consumer side: null when nothing is published ----
  void* pop() noexcept {
    if (cons_.head == cons_.tail_seen) {
      publish_head();
      cons_.tail_seen = tail_.load(std::memory_order_acquire);
      if (cons_.head == cons_.tail_seen) return nullptr;
    }
    void* p = slots_[cons_.head & (kCapacity - 1)];
    if (++cons_.head - cons_.published >= kBatch) publish_head();
    return p;
  }

  // Spins a while, then yields: if both threads share a CPU, spinning alone would stall.
  static void relax(unsigned& spins) noexcept {
    if (++spins < 2000) {
      _mm_pause();
    } else {
      sched_yield();
    }
  }

 private:
  void wait_for_space() noexcept {
    flush();
    unsigned spins = 0;
    while ((prod_.head_seen = head_.load(std::memory_order_acquire)) + kCapacity == prod_.tail) {
      relax(spins);
    }
  }
  void publish_head() noexcept {
    head_.store(cons_.head, std::memory_order_release);
    cons_.published = cons_.head;
  }

  struct alignas(64) Producer {
    std::uint64_t tail = 0;
    std::uint64_t published = 0;
    std::uint64_t head_seen = 0;
  };
  struct alignas(64) Consumer {
    std::uint64_t head = 0;
    std::uint64_t published = 0;
    std::uint64_t tail_seen = 0;
  };
  Producer prod_;
  Consumer cons_;
  alignas(64) std::atomic<std::uint64_t> tail_{0};
  alignas(64) std::atomic<std::uint64_t> head_{0};
  alignas(64) void* slots_[kCapacity] = {};
};

}  // namespace msgbench
