// snapshot_bench_io: the snapshot benchmark's file side and its raw I/O baselines.
//
// The baselines are what the hardware and kernel give an ordinary program moving the same number
// of bytes: write(2) from a resident buffer in large calls, read(2) into a buffer that was never
// touched. They use the same syscalls the snapshot library can use, so a ratio below 1 is the
// library's own overhead (checksums, page scanning, small calls), not the disk's.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "reheap/snapshot_error.h"
#include "snapshot_bench.h"

namespace snapbench {
namespace {

// Large calls so that the baseline pays for the copy and the filesystem, not for syscall count;
// below 2 GiB because Linux caps one write(2) at 0x7ffff000 bytes anyway.
constexpr std::size_t kRawChunk = 64 * kMiB;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "snapshot_bench: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

int open_or_die(const std::filesystem::path& file, int flags) {
  const int fd = ::open(file.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) die("open " + file.string());
  return fd;
}

void write_all(int fd, const void* data, std::size_t size, const std::string& name) {
  const auto* p = static_cast<const unsigned char*>(data);
  while (size > 0) {
    const std::size_t n = size < kRawChunk ? size : kRawChunk;
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      die("write " + name);
    }
    p += w;
    size -= static_cast<std::size_t>(w);
  }
}

void fsync_or_die(int fd, const std::string& name) {
  if (::fsync(fd) != 0) die("fsync " + name);
}

void close_or_die(int fd, const std::string& name) {
  if (::close(fd) != 0) die("close " + name);
}

void fsync_directory(const std::filesystem::path& dir) {
  const int fd = open_or_die(dir, O_RDONLY | O_DIRECTORY);
  fsync_or_die(fd, dir.string());
  close_or_die(fd, dir.string());
}

}  // namespace

FdSink::FdSink(const std::filesystem::path& file)
    : fd_(open_or_die(file, O_WRONLY | O_CREAT | O_TRUNC)) {}

FdSink::~FdSink() {
  if (fd_ >= 0) ::close(fd_);
}

void FdSink::write(const void* data, std::size_t size) {
  // The library's contract for sinks: take everything or throw SnapshotError.
  const auto* p = static_cast<const unsigned char*>(data);
  ++calls_;
  bytes_ += size;
  while (size > 0) {
    const ssize_t w = ::write(fd_, p, size);
    if (w < 0) {
      if (errno == EINTR) continue;
      const bool full = errno == ENOSPC || errno == EDQUOT;
      throw reheap::SnapshotError(full ? reheap::SnapshotErrc::kNoSpace : reheap::SnapshotErrc::kIo,
                                  std::string("FdSink write: ") + std::strerror(errno));
    }
    p += w;
    size -= static_cast<std::size_t>(w);
  }
}

void FdSink::close() {
  if (fd_ >= 0) close_or_die(fd_, "FdSink");
  fd_ = -1;
}

unsigned char* map_filled_buffer(std::size_t bytes, std::uint64_t seed) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) die("mmap raw buffer");
  // The same kind of content as the heap's blocks (xorshift words), so that neither side gets
  // zero pages or compressible data for free on a filesystem that might exploit either.
  auto* words = static_cast<std::uint64_t*>(p);
  std::uint64_t x = seed | 1;
  for (std::size_t i = 0; i < bytes / sizeof(std::uint64_t); ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    words[i] = x;
  }
  return static_cast<unsigned char*>(p);
}

void unmap_buffer(void* p, std::size_t bytes) {
  if (p != nullptr) ::munmap(p, bytes);
}

void raw_write_file(const std::filesystem::path& file, const void* buffer, std::size_t bytes,
                    bool fsync_file) {
  const int fd = open_or_die(file, O_WRONLY | O_CREAT | O_TRUNC);
  write_all(fd, buffer, bytes, file.string());
  if (fsync_file) fsync_or_die(fd, file.string());
  close_or_die(fd, file.string());
}

std::uint64_t raw_read_file_fresh(const std::filesystem::path& file) {
  const int fd = open_or_die(file, O_RDONLY);
  struct stat st {};
  if (::fstat(fd, &st) != 0) die("fstat " + file.string());
  const auto size = static_cast<std::size_t>(st.st_size);
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) die("mmap read buffer");
  auto* dst = static_cast<unsigned char*>(p);
  std::size_t done = 0;
  while (done < size) {
    const std::size_t want = size - done < kRawChunk ? size - done : kRawChunk;
    const ssize_t r = ::read(fd, dst + done, want);
    if (r < 0) {
      if (errno == EINTR) continue;
      die("read " + file.string());
    }
    if (r == 0) break;
    done += static_cast<std::size_t>(r);
  }
  close_or_die(fd, file.string());
  // Unmapping is part of the baseline's cost as destroying a heap is not part of restore's; it
  // is cheap next to the copy, and keeps memory bounded across repetitions.
  ::munmap(p, size);
  return done;
}

void write_file_crash_safe(const std::filesystem::path& file, const void* data, std::size_t size) {
  std::filesystem::path tmp = file;
  tmp += ".tmp";
  const int fd = open_or_die(tmp, O_WRONLY | O_CREAT | O_TRUNC);
  write_all(fd, data, size, tmp.string());
  fsync_or_die(fd, tmp.string());
  close_or_die(fd, tmp.string());
  if (::rename(tmp.c_str(), file.c_str()) != 0) die("rename " + tmp.string());
  fsync_directory(file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path());
}

void write_file_plain(const std::filesystem::path& file, const void* data, std::size_t size) {
  raw_write_file(file, data, size, false);
}

std::vector<char> read_whole_file(const std::filesystem::path& file) {
  const int fd = open_or_die(file, O_RDONLY);
  struct stat st {};
  if (::fstat(fd, &st) != 0) die("fstat " + file.string());
  std::vector<char> out(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t r = ::read(fd, out.data() + done, out.size() - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      die("read " + file.string());
    }
    if (r == 0) break;
    done += static_cast<std::size_t>(r);
  }
  out.resize(done);
  close_or_die(fd, file.string());
  return out;
}

bool drop_page_cache() {
  ::sync();
  const int fd = ::open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, "1", 1) == 1;
  ::close(fd);
  return ok;
}

void flush_dirty() { ::sync(); }

void prime_memory(std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) return;  // priming is best effort: the step is still measured
  ::munmap(p, bytes);
}

void prepare_step(const Options& options, std::size_t bytes) {
  flush_dirty();
  if (options.prime) prime_memory(2 * bytes);
}

std::uint64_t free_bytes(const std::filesystem::path& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) die("statvfs " + dir.string());
  return static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
}

std::string filesystem_name(const std::filesystem::path& dir) {
  struct statfs st {};
  if (::statfs(dir.c_str(), &st) != 0) return "unknown";
  // The magic numbers of <linux/magic.h> for the filesystems a benchmark directory is likely on.
  switch (static_cast<unsigned long>(st.f_type)) {
    case 0xEF53: return "ext2/3/4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x01021994: return "tmpfs (RAM: no disk involved)";
    case 0x794c7630: return "overlayfs";
    default: return fmt("fs-magic-0x%lx", static_cast<unsigned long>(st.f_type));
  }
}

std::uint64_t bytes_on_disk(const std::filesystem::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return 0;
  return static_cast<std::uint64_t>(st.st_size);
}

void remove_file(const std::filesystem::path& file) { ::unlink(file.c_str()); }

}  // namespace snapbench
