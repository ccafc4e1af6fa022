// What `replay` checks of a crash bundle before it runs anything: that the manifest is one
// (recording/crash_manifest.h), that the anchor is a snapshot, and that the log is of the
// manifest's recording and reaches the failing event the manifest names, marking it failed.
//
// The replaying program checks the same (Replay::open of a bundle); reheap-snap checks it first
// so that its own exit status never says "no failure" for a bundle cut short, whatever the
// program it runs reports, and so that a bad bundle is refused before any program runs. Every file
// is read as a regular file with a bound (recording_file.h), and the log one segment at a time.
#pragma once

#include <chrono>
#include <filesystem>

#include "recording/crash_manifest.h"  // runtime/src
#include "reheap/recording_log.h"

namespace reheap::snap {

struct CheckedBundle {
  std::filesystem::path manifest_file;
  detail::recording::CrashManifest manifest;
  LogHeader log;  // the first segment's header: the build that recorded the bundle
  detail::recording::BundleLogReach reach;
};

// Throws RecordingError naming the file at fault (kIncomplete for a log that does not reach or
// mark the failing event), SnapshotError for an anchor that is not a snapshot, and
// RecordingError(kIo) "not read within the timeout" once `deadline` passes.
CheckedBundle check_bundle(const std::filesystem::path& bundle, std::chrono::steady_clock::time_point deadline);

}  // namespace reheap::snap
