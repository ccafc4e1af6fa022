// Snapshot errors: one exception type with a code saying which rule the input or the environment
// broke, and a message naming the file and the problem in words a user can act on.
#pragma once

#include <stdexcept>
#include <string>

namespace reheap {

enum class SnapshotErrc {
  kIo,                  // open/read/write/fsync/rename failed (errno text in the message)
  kNoSpace,             // ENOSPC or EDQUOT while writing; the previous file is untouched
  kTruncated,           // the file ends before its trailer
  kCorrupt,             // a checksum or a structural check failed
  kNotASnapshot,        // wrong magic: not a reheap snapshot at all
  kUnsupportedVersion,  // a format version this reader does not know
  kLayoutMismatch,      // different binary, libraries or load addresses (see program_layout.h)
  kZoneMismatch,        // different zone base/size, chunk or page size, or allocator build
  kRangeInUse,          // the heap's chunks are taken in this process (e.g. the heap is alive)
  kOverLimit,           // the heap is larger than RestoreOptions::limit_bytes
  kBrokenChain,         // an increment's parent is missing, or is not the snapshot it names
  kMisuse,              // the API was used against its rules (e.g. the heap was destroyed)
};

// The code's name, e.g. "corrupt", for messages and `reheap-snap --json`.
const char* to_string(SnapshotErrc code) noexcept;

class SnapshotError : public std::runtime_error {
 public:
  SnapshotError(SnapshotErrc code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  SnapshotErrc code() const noexcept { return code_; }

 private:
  SnapshotErrc code_;
};

}  // namespace reheap
