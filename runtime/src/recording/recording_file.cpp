// Reading a recording's files (see recording_file.h).
#include "recording/recording_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "reheap/recording_log.h"

namespace reheap::detail::recording {
namespace {

// Reads are this large at most: a log of many megabytes goes in a few hundred calls, and the
// first one is all a file without the magic number costs.
constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what) {
  throw RecordingError(RecordingErrc::kIo, file, 0, what);
}

[[noreturn]] void refuse_type(const std::filesystem::path& file, mode_t mode, const RecordingFileKind& kind) {
  fail(file, std::string("is a ") + file_type_name(mode) + ", not a regular file (" + kind.what +
                 " is read from a regular file only)");
}

// A descriptor that closes itself.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Appends up to `want` bytes read from `fd` to `out`; fewer only at the end of the file.
void read_into(const std::filesystem::path& file, int fd, std::vector<unsigned char>& out, std::size_t want) {
  while (want != 0) {
    const std::size_t at = out.size();
    const std::size_t step = std::min(want, kChunkBytes);
    out.resize(at + step);
    const ssize_t n = ::read(fd, out.data() + at, step);
    if (n < 0 && errno == EINTR) {
      out.resize(at);
      continue;
    }
    if (n < 0) {
      const int err = errno;
      out.resize(at);
      fail(file, std::string("cannot read the file: ") + std::strerror(err));
    }
    out.resize(at + static_cast<std::size_t>(n));
    if (n == 0) return;  // shorter than it was: the parser reports what is missing
    want -= static_cast<std::size_t>(n);
  }
}

}  // namespace

const char* file_type_name(unsigned mode) noexcept {
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  if (S_ISSOCK(mode)) return "socket";
  return "special file";
}

std::vector<unsigned char> read_recording_file(const std::filesystem::path& file, const RecordingFileKind& kind) {
  struct stat st {};
  // The name's type first, so that a device is never opened at all (opening one can act by
  // itself: a tape rewinds, a terminal becomes the controlling one). A name stat() cannot resolve
  // is left to open(), whose error says why.
  if (::stat(file.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) refuse_type(file, st.st_mode, kind);
  // The name may have been replaced since: O_NONBLOCK keeps open() from waiting for a FIFO's
  // writer, and the type that counts is that of what was opened.
  Fd fd{::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
  if (fd.fd < 0) fail(file, std::string("cannot open the file: ") + std::strerror(errno));
  if (::fstat(fd.fd, &st) != 0) fail(file, std::string("cannot read the file's type: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) refuse_type(file, st.st_mode, kind);
  // Linux ignores O_NONBLOCK for regular files; cleared anyway, so that no file system can make a
  // read fail with EAGAIN.
  const int flags = ::fcntl(fd.fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd.fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    fail(file, std::string("cannot set the descriptor's flags: ") + std::strerror(errno));
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > kind.max_bytes) {
    fail(file, "is " + std::to_string(size) + " bytes, more than " + kind.what + " can be (at most " +
                   std::to_string(kind.max_bytes) + " bytes)");
  }
  std::vector<unsigned char> bytes;
  const auto whole = static_cast<std::size_t>(size);
  read_into(file, fd.fd, bytes, std::min(whole, kChunkBytes));
  const bool has_magic = bytes.size() >= kind.magic.size() &&
                         std::equal(kind.magic.begin(), kind.magic.end(), bytes.begin());
  if (!has_magic || bytes.size() == whole) return bytes;
  try {
    bytes.reserve(whole);
  } catch (const std::bad_alloc&) {
    fail(file, "is " + std::to_string(size) + " bytes, more than this process can hold in memory");
  }
  read_into(file, fd.fd, bytes, whole - bytes.size());
  return bytes;
}

}  // namespace reheap::detail::recording
