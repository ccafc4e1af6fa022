// The node's state directory as the process settled it (reheap/node_identity.h), and the lock
// that orders everything kept there for one node.
//
// Two things live in a state directory per node: the incarnation counter (node_identity.cpp) and
// the registry of the snapshot files the node saved (snapshot/snapshot_registry.h). Both are
// changed only under the node's lock, an exclusive flock on <dir>/node-<n>.lock, so that the
// processes of one node (and threads of one process: flock locks are per open file description,
// and each NodeLock opens its own) take turns. The lock file is never removed: removing it would
// let two processes lock different files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace reheap::detail {

// The settled identity's state directory, or an empty path (no state directory, or the
// identity is not settled yet). Never settles the identity.
std::filesystem::path state_directory();

// "node-<n>": the prefix of the node's files in the state directory.
std::string node_file_prefix(std::uint32_t node);

class NodeLock {
 public:
  // Creates `dir` if missing and locks the node's lock file there, waiting for other holders.
  // Throws std::system_error naming the directory and `purpose` (what the lock is for) if the
  // directory or the lock file cannot be made or locked.
  NodeLock(const std::filesystem::path& dir, std::uint32_t node, const char* purpose);
  ~NodeLock();
  NodeLock(const NodeLock&) = delete;
  NodeLock& operator=(const NodeLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace reheap::detail
