// DataDirLock: one reheap-kv per data directory.
//
// Two servers on one directory would each save under the same file names (the generation comes
// from the manifest both read at their start) and each replace the manifest, so an acknowledged
// SAVE of one would silently become the other's set. A server therefore holds an exclusive
// flock(2) on the directory itself for its whole life, taken before it reads the manifest, and a
// second server refuses to start.
//
// The directory, not a lock file in it: a lock file would outlive the process and sit among the
// saved files (and deleting it on the way out races with a server starting, which could then lock
// a file nobody else sees). The kernel drops the lock when the process ends, kill -9 included, so
// a restart never finds a stale one. flock is advisory and local: it does not keep out other
// programs, nor a server on another machine sharing the directory over NFS.
#pragma once

#include <filesystem>
#include <stdexcept>

namespace kv {

// The directory is held by another process, or cannot be opened or locked: what() names the
// directory and says which.
class DataDirLockError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class DataDirLock {
 public:
  // Locks `dir`, an existing directory, without waiting; throws DataDirLockError if it cannot.
  explicit DataDirLock(const std::filesystem::path& dir);
  ~DataDirLock();
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

 private:
  int fd_ = -1;  // the directory, open for the lock's life: closing it releases the lock
};

}  // namespace kv
