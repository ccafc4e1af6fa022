#include "reheap/snapshot_error.h"

namespace reheap {

const char* to_string(SnapshotErrc code) noexcept {
  switch (code) {
    case SnapshotErrc::kIo: return "io";
    case SnapshotErrc::kNoSpace: return "no-space";
    case SnapshotErrc::kTruncated: return "truncated";
    case SnapshotErrc::kCorrupt: return "corrupt";
    case SnapshotErrc::kNotASnapshot: return "not-a-snapshot";
    case SnapshotErrc::kUnsupportedVersion: return "unsupported-version";
    case SnapshotErrc::kLayoutMismatch: return "layout-mismatch";
    case SnapshotErrc::kZoneMismatch: return "zone-mismatch";
    case SnapshotErrc::kRangeInUse: return "range-in-use";
    case SnapshotErrc::kOverLimit: return "over-limit";
    case SnapshotErrc::kBrokenChain: return "broken-chain";
    case SnapshotErrc::kMisuse: return "misuse";
  }
  return "unknown";
}

}  // namespace reheap
