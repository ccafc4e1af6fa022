// DataDirLock (see data_dir_lock.h).
#include "data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace kv {

DataDirLock::DataDirLock(const std::filesystem::path& dir) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) {
    throw DataDirLockError("cannot open the data directory " + dir.string() + " to lock it: " + std::strerror(errno));
  }
  int result = 0;
  do {
    result = ::flock(fd_, LOCK_EX | LOCK_NB);
  } while (result != 0 && errno == EINTR);
  if (result == 0) return;
  const int error = errno;
  ::close(fd_);
  fd_ = -1;
  if (error == EWOULDBLOCK) {
    throw DataDirLockError("the data directory " + dir.string() +
                           " is in use: another reheap-kv holds its lock (two servers on one directory "
                           "would replace each other's saves); stop it or use another --dir");
  }
  throw DataDirLockError("cannot lock the data directory " + dir.string() + ": " + std::strerror(error));
}

DataDirLock::~DataDirLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace kv
