// Files for snapshots: a buffered sink over a descriptor, a source over a descriptor, and the
// crash-safe replacement of a file (write a temporary, fsync, rename, fsync the directory).
// Every snapshot file opened for reading is opened by open_snapshot_file (snapshot_file.h, defined
// in file_io.cpp), which refuses FIFOs, directories, devices and sockets before reading a byte.
//
// Errors name the file and the system's reason; ENOSPC and EDQUOT become kNoSpace, so that a
// full disk is told apart from other I/O failures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "reheap/byte_stream.h"

namespace reheap::detail::snapshot {

class Publication;

// Throws SnapshotError (kIo, or kNoSpace for ENOSPC/EDQUOT) naming `name` and the failed call.
[[noreturn]] void fail_errno(int err, const std::string& name, const char* call);

// Writes to a descriptor it does not own. Small writes are gathered in a buffer; large ones go
// straight from the caller's memory (the heap's pages) to the kernel.
class FdSink final : public ByteSink {
 public:
  FdSink(int fd, std::string name);
  ~FdSink() override;
  void write(const void* data, std::size_t size) override;
  void flush();
  std::uint64_t bytes() const noexcept { return bytes_; }

 private:
  void write_all(const void* data, std::size_t size);
  int fd_;
  std::string name_;
  unsigned char* buffer_;
  std::size_t used_ = 0;
  std::uint64_t bytes_ = 0;
};

// Reads from a descriptor it owns.
class FdSource final : public ByteSource {
 public:
  // Opens `file` with open_snapshot_file (a regular file only); throws kIo naming it on failure.
  explicit FdSource(const std::filesystem::path& file);
  ~FdSource() override;
  FdSource(const FdSource&) = delete;
  FdSource& operator=(const FdSource&) = delete;
  std::size_t read(void* data, std::size_t size) override;
  std::uint64_t size() const noexcept { return size_; }
  int fd() const noexcept { return fd_; }

 private:
  int fd_;
  std::string name_;
  std::uint64_t size_ = 0;
};

// `file` made absolute, for a file a save writes: an empty name is misuse, not an I/O error.
std::filesystem::path save_target(const std::filesystem::path& file, const char* operation);

// A new version of `target`, written to a temporary file beside it and put in place by commit().
// Destroying an uncommitted AtomicFile removes the temporary; a process killed before commit()
// leaves at most a temporary named "<target>.tmp-<pid>-<n>", which the next AtomicFile for the
// same target removes once that process is gone. Threads may replace the same target at once:
// each has its own temporary, and the target is always one complete version.
class AtomicFile {
 public:
  explicit AtomicFile(const std::filesystem::path& target);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  ByteSink& sink() noexcept { return *sink_; }
  // fsync, rename over the target, fsync of the directory. Returns the file's size. A snapshot
  // file passes its `publication` (snapshot_registry.h), told before and after the rename: if
  // before_rename() throws, the target is left as it was.
  std::uint64_t commit(Publication* publication = nullptr);

 private:
  std::filesystem::path target_;
  std::filesystem::path temporary_;
  int fd_ = -1;
  FdSink* sink_ = nullptr;
  bool committed_ = false;
};

}  // namespace reheap::detail::snapshot
