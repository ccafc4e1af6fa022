// Helpers shared by the message allocator's tests: byte patterns that tell blocks apart, and a
// small blocking queue for handing pointers between threads.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include "reheap/message_allocator.h"

namespace reheap::test {

// Fills `size` bytes with a pattern derived from `seed`, and checks it.
inline void fill_pattern(void* p, std::size_t size, std::uint64_t seed) {
  auto* bytes = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<unsigned char>(seed * 31 + i * 7);
}

inline bool has_pattern(const void* p, std::size_t size, std::uint64_t seed) {
  const auto* bytes = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < size; ++i) {
    if (bytes[i] != static_cast<unsigned char>(seed * 31 + i * 7)) return false;
  }
  return true;
}

// A message as the tests send it: its size and a seed, followed by the pattern.
struct Sent {
  void* block = nullptr;
  std::size_t size = 0;
  std::uint64_t seed = 0;
};

inline Sent make_message(std::size_t size, std::uint64_t seed) {
  Sent m{MessageAllocator::allocate(size), size, seed};
  if (m.block != nullptr) fill_pattern(m.block, size, seed);
  return m;
}

// Unbounded multi-producer, multi-consumer queue; pop() returns nullopt once closed and empty.
template <typename T>
class BlockingQueue {
 public:
  void push(T value) {
    {
      std::lock_guard<std::mutex> guard(lock_);
      items_.push_back(value);
    }
    ready_.notify_one();
  }
  void close() {
    {
      std::lock_guard<std::mutex> guard(lock_);
      closed_ = true;
    }
    ready_.notify_all();
  }
  std::optional<T> pop() {
    std::unique_lock<std::mutex> guard(lock_);
    ready_.wait(guard, [this] { return closed_ || !items_.empty(); });
    if (items_.empty()) return std::nullopt;
    T value = items_.front();
    items_.pop_front();
    return value;
  }

 private:
  std::mutex lock_;
  std::condition_variable ready_;
  std::deque<T> items_;
  bool closed_ = false;
};

}  // namespace reheap::test
