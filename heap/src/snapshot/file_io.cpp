#include "file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "reheap/snapshot_error.h"
#include "reheap/snapshot_file.h"
#include "snapshot_registry.h"

namespace reheap::detail::snapshot {

namespace {
constexpr std::size_t kBufferSize = 256 * 1024;
}

void fail_errno(int err, const std::string& name, const char* call) {
  const bool full = err == ENOSPC || err == EDQUOT;
  throw SnapshotError(full ? SnapshotErrc::kNoSpace : SnapshotErrc::kIo,
                      name + ": " + call + ": " + std::strerror(err) +
                          (full ? " (the disk is full; the previous snapshot is untouched)" : ""));
}

namespace {

const char* file_type_name(mode_t mode) {
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  if (S_ISSOCK(mode)) return "socket";
  return "special file";
}

[[noreturn]] void refuse_type(const std::string& name, mode_t mode) {
  throw SnapshotError(SnapshotErrc::kIo,
                      name + ": is a " + file_type_name(mode) +
                          ", not a regular file (snapshots are read from regular files only)");
}

}  // namespace

FdSink::FdSink(int fd, std::string name)
    : fd_(fd), name_(std::move(name)), buffer_(static_cast<unsigned char*>(std::malloc(kBufferSize))) {
  if (buffer_ == nullptr) fail_errno(ENOMEM, name_, "malloc");
}

FdSink::~FdSink() { std::free(buffer_); }

void FdSink::write_all(const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  while (size != 0) {
    // At most 1 GiB per call: Linux writes at most 0x7ffff000 bytes at once anyway.
    const std::size_t step = size < (std::size_t{1} << 30) ? size : (std::size_t{1} << 30);
    const ssize_t n = ::write(fd_, p, step);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_errno(errno, name_, "write");
    }
    if (n == 0) fail_errno(EIO, name_, "write returned 0");
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

void FdSink::write(const void* data, std::size_t size) {
  bytes_ += size;
  if (used_ + size <= kBufferSize) {
    std::memcpy(buffer_ + used_, data, size);
    used_ += size;
    return;
  }
  flush();
  if (size < kBufferSize / 2) {
    std::memcpy(buffer_, data, size);
    used_ = size;
    return;
  }
  write_all(data, size);
}

void FdSink::flush() {
  if (used_ == 0) return;
  const std::size_t n = used_;
  used_ = 0;
  write_all(buffer_, n);
}

FdSource::FdSource(const std::filesystem::path& file)
    : fd_(open_snapshot_file(file)), name_(file.string()) {
  struct stat st {};
  if (::fstat(fd_, &st) == 0) {
    size_ = static_cast<std::uint64_t>(st.st_size);
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
}

FdSource::~FdSource() { ::close(fd_); }

std::size_t FdSource::read(void* data, std::size_t size) {
  auto* p = static_cast<unsigned char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const std::size_t step = size - done < (std::size_t{1} << 30) ? size - done : (std::size_t{1} << 30);
    const ssize_t n = ::read(fd_, p + done, step);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_errno(errno, name_, "read");
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

namespace {

// Removes "<target>.tmp-<pid>-<n>" files left by processes that no longer exist. (A directory
// shared between PID namespaces could name a live writer of another namespace by a pid that is
// free here; such setups must not share a snapshot directory.)
void remove_stale_temporaries(const std::filesystem::path& target) {
  const std::string prefix = target.filename().string() + ".tmp-";
  std::error_code ec;
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : ".";
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (pid <= 0 || *end != '-') continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::filesystem::remove(entry.path(), ec);
    }
  }
}

// Distinguishes the temporaries of one process: threads may save to the same target at once.
std::atomic<std::uint64_t> g_temporary_counter{0};

void fsync_directory(const std::filesystem::path& dir, const std::string& name) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail_errno(errno, name, "open (directory, for fsync)");
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) fail_errno(err, name, "fsync (directory)");
}

}  // namespace

std::filesystem::path save_target(const std::filesystem::path& file, const char* operation) {
  if (file.empty()) {
    throw SnapshotError(SnapshotErrc::kMisuse, std::string(operation) + ": the file name is empty");
  }
  std::error_code error;
  std::filesystem::path absolute = std::filesystem::absolute(file, error);
  if (error) {
    throw SnapshotError(SnapshotErrc::kIo, file.string() + ": " + operation + ": " + error.message());
  }
  return absolute;
}

AtomicFile::AtomicFile(const std::filesystem::path& target) : target_(target) {
  remove_stale_temporaries(target_);
  // O_EXCL: a name still in use (a writer of this process, or a leftover) is never shared.
  for (int attempt = 0; fd_ < 0; ++attempt) {
    temporary_ = target_;
    temporary_ += ".tmp-" + std::to_string(::getpid()) + "-" +
                  std::to_string(g_temporary_counter.fetch_add(1, std::memory_order_relaxed));
    fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0 && (errno != EEXIST || attempt == 1000)) fail_errno(errno, temporary_.string(), "open");
  }
  sink_ = new FdSink(fd_, temporary_.string());
}

AtomicFile::~AtomicFile() {
  delete sink_;
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temporary_.c_str());
}

std::uint64_t AtomicFile::commit(Publication* publication) {
  sink_->flush();
  const std::uint64_t size = sink_->bytes();
  if (::fsync(fd_) != 0) fail_errno(errno, temporary_.string(), "fsync");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail_errno(errno, temporary_.string(), "close");
  if (publication != nullptr) publication->before_rename();
  if (::rename(temporary_.c_str(), target_.c_str()) != 0) fail_errno(errno, target_.string(), "rename");
  committed_ = true;
  if (publication != nullptr) publication->after_rename();
  fsync_directory(target_.parent_path(), target_.string());
  return size;
}

}  // namespace reheap::detail::snapshot

// Public (snapshot_file.h), and defined here with the other descriptor code.
int reheap::open_snapshot_file(const std::filesystem::path& file) {
  using namespace detail::snapshot;
  const std::string name = file.string();
  struct stat st {};
  // The name's type first, so that a device is never opened at all: opening one can act by
  // itself (a tape rewinds, a watchdog arms, a terminal becomes the controlling one). A name
  // stat() cannot resolve is left to open(), whose error says why.
  if (::stat(file.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) refuse_type(name, st.st_mode);
  // The name may have been replaced since. O_NONBLOCK keeps open() from waiting for a writer if
  // it is a FIFO now, and the type that counts is that of what was opened.
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) fail_errno(errno, name, "open");
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail_errno(err, name, "fstat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse_type(name, st.st_mode);
  }
  // Linux ignores O_NONBLOCK for regular files; cleared anyway, so that no filesystem can make a
  // read fail with EAGAIN, which the readers would take for an I/O error.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    fail_errno(err, name, "fcntl");
  }
  return fd;
}

