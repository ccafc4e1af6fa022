// Where a recorder's blocks go: append-only file segments, or a ring in memory.
//
// FileSegmentSink writes `log-<first event>.rlog` segments into a directory, each opening with
// the recording's file header, and starts a new segment when the current one would pass its
// size, at the start of an event (a block that continues a long event stays in the current
// segment). Segments are opened with O_APPEND and only ever grown by whole blocks: a write that
// fails (a full disk, a file size limit) is cut back to the last whole block and reported as a
// RecordingError(kIo), so every block written before stays readable. The sink does not fsync:
// a recording survives the process, not the machine (the crash bundle is what must survive a
// failing reactor, and the process outlives that).
//
// MemoryLogSink keeps one log (header and blocks) in a byte vector; the ring recorder empties it
// at each new checkpoint (recorder.cpp), keeping the vector's capacity up to about the ring's
// bound.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <utility>
#include <vector>

#include "reheap/recording_log.h"

namespace reheap::detail::recording {

// Writes all of `data` or returns the errno of the failure (0). Async-signal-safe.
int write_all(int fd, const unsigned char* data, std::size_t size) noexcept;

class FileSegmentSink final : public LogSink {
 public:
  FileSegmentSink(std::filesystem::path directory, LogHeader header, std::size_t segment_bytes)
      : directory_(std::move(directory)), header_(std::move(header)), segment_bytes_(segment_bytes) {}
  ~FileSegmentSink() override;
  FileSegmentSink(const FileSegmentSink&) = delete;
  FileSegmentSink& operator=(const FileSegmentSink&) = delete;

  // Opens the first segment, for the events after `events_before` (so that a recording with no
  // block yet is still a readable, empty log).
  void start(std::uint64_t events_before) { open_segment(events_before); }
  void write_block(std::uint64_t events_before, std::span<const unsigned char> block) override;
  // For a fatal signal's handler: appends `pieces` (one block) to the current segment with
  // write(2) alone, past segment_bytes if need be. False if it could not write all of them.
  bool append_in_signal_handler(std::span<const std::span<const unsigned char>> pieces) noexcept;
  // The segments written so far, oldest first.
  const std::vector<std::filesystem::path>& segments() const noexcept { return segments_; }
  // Bytes written to every segment so far, headers included.
  std::uint64_t bytes_written() const noexcept { return closed_bytes_ + size_; }

 private:
  void open_segment(std::uint64_t events_before);
  void close_segment() noexcept;

  std::filesystem::path directory_;
  LogHeader header_;
  std::size_t segment_bytes_;
  int fd_ = -1;
  std::size_t size_ = 0;         // of the open segment
  std::uint64_t closed_bytes_ = 0;  // of the segments before it
  std::size_t header_bytes_ = 0;
  std::vector<std::filesystem::path> segments_;
};

class MemoryLogSink final : public LogSink {
 public:
  // Starts the log over: just the header, for `events_before`. The buffer is kept for the next
  // log unless its capacity exceeds `keep_capacity`.
  void reset(LogHeader header, std::size_t keep_capacity = 0);
  void write_block(std::uint64_t events_before, std::span<const unsigned char> block) override;
  const std::vector<unsigned char>& bytes() const noexcept { return bytes_; }
  // The log so far, taken out: the sink holds nothing until reset().
  std::vector<unsigned char> take_bytes() noexcept { return std::exchange(bytes_, {}); }
  std::uint64_t events_before() const noexcept { return events_before_; }

 private:
  std::vector<unsigned char> bytes_;
  std::uint64_t events_before_ = 0;
};

}  // namespace reheap::detail::recording
