// Byte streams: where snapshot bytes go to and come from when they are not plain files (a
// socket, a pipe, a buffer in memory, a test's fault injector).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace reheap {

// Receives a snapshot in order. write() either takes all `size` bytes or throws (SnapshotError
// with kIo or kNoSpace is what the library's own sinks throw).
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual void write(const void* data, std::size_t size) = 0;
};

// Yields a snapshot in order. read() returns the number of bytes read, fewer than `size` only at
// the end of the stream (0 once it is over); it throws on errors.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual std::size_t read(void* data, std::size_t size) = 0;
};

// A sink appending to a byte vector, and a source reading from memory.
class VectorSink final : public ByteSink {
 public:
  explicit VectorSink(std::vector<unsigned char>& out) : out_(out) {}
  void write(const void* data, std::size_t size) override;

 private:
  std::vector<unsigned char>& out_;
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(const void* data, std::size_t size)
      : data_(static_cast<const unsigned char*>(data)), size_(size) {}
  std::size_t read(void* data, std::size_t size) override;

 private:
  const unsigned char* data_;
  std::size_t size_;
  std::size_t offset_ = 0;
};

}  // namespace reheap
