#include "reheap/byte_stream.h"

#include <algorithm>
#include <cstring>

namespace reheap {

void VectorSink::write(const void* data, std::size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  out_.insert(out_.end(), bytes, bytes + size);
}

std::size_t MemorySource::read(void* data, std::size_t size) {
  const std::size_t n = std::min(size, size_ - offset_);
  if (n != 0) std::memcpy(data, data_ + offset_, n);
  offset_ += n;
  return n;
}

}  // namespace reheap
