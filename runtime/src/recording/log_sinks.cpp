// Log sinks (see log_sinks.h).
#include "recording/log_sinks.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "recording/log_codec.h"

namespace reheap::detail::recording {

int write_all(int fd, const unsigned char* data, std::size_t size) noexcept {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return 0;
}

FileSegmentSink::~FileSegmentSink() { close_segment(); }

void FileSegmentSink::close_segment() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void FileSegmentSink::open_segment(std::uint64_t events_before) {
  close_segment();
  closed_bytes_ += size_;
  size_ = 0;
  const std::filesystem::path file = directory_ / ("log-" + std::to_string(events_before + 1) + ".rlog");
  fd_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw RecordingError(RecordingErrc::kIo, file, events_before + 1,
                         std::string("cannot create the log segment: ") + std::strerror(errno));
  }
  header_.events_before = events_before;
  const std::vector<unsigned char> header = encode_log_header(header_);
  if (const int error = write_all(fd_, header.data(), header.size()); error != 0) {
    close_segment();
    ::unlink(file.c_str());
    throw RecordingError(RecordingErrc::kIo, file, events_before + 1,
                         std::string("cannot write the log segment's header: ") + std::strerror(error));
  }
  size_ = header.size();
  header_bytes_ = header.size();
  segments_.push_back(file);
}

void FileSegmentSink::write_block(std::uint64_t events_before, std::span<const unsigned char> block) {
  // A new segment starts only with a block that starts an event (its first record is an input
  // record), so that a segment's header counts the events before its first record; a block that
  // continues a long event goes on in the current segment, past segment_bytes if need be.
  const bool starts_event = block.size() > detail::recording::kBlockHeaderBytes &&
                            is_input(static_cast<RecordKind>(block[detail::recording::kBlockHeaderBytes]));
  if (fd_ < 0 || (starts_event && size_ > header_bytes_ && size_ + block.size() > segment_bytes_)) {
    open_segment(events_before);
  }
  if (const int error = write_all(fd_, block.data(), block.size()); error != 0) {
    // Cut a partly written block off, so that the segment still ends on a whole block.
    const int cut = ::ftruncate(fd_, static_cast<off_t>(size_));
    close_segment();
    throw RecordingError(RecordingErrc::kIo, segments_.back(), events_before + 1,
                         std::string("cannot write the log: ") + std::strerror(error) +
                             (cut == 0 ? "" : " (and the torn block could not be cut off)"));
  }
  size_ += block.size();
}

bool FileSegmentSink::append_in_signal_handler(std::span<const std::span<const unsigned char>> pieces) noexcept {
  if (fd_ < 0) return false;
  for (const std::span<const unsigned char> piece : pieces) {
    if (write_all(fd_, piece.data(), piece.size()) != 0) return false;
  }
  return true;
}

void MemoryLogSink::reset(LogHeader header, std::size_t keep_capacity) {
  events_before_ = header.events_before;
  const std::vector<unsigned char> encoded = encode_log_header(header);
  if (bytes_.capacity() > keep_capacity) {
    bytes_ = encoded;  // a long event grew it far past the ring's bound: give that back
  } else {
    // The ring keeps its buffer from one checkpoint to the next, rather than growing it (copying
    // it, and faulting fresh pages in) from nothing each time.
    bytes_.assign(encoded.begin(), encoded.end());
  }
}

void MemoryLogSink::write_block(std::uint64_t, std::span<const unsigned char> block) {
  bytes_.insert(bytes_.end(), block.begin(), block.end());
}

}  // namespace reheap::detail::recording
