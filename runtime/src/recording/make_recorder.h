// The runtime's recorder (recorder.h's interface, reheap/recording.h's modes): creates the
// recorder of a reactor spawned or restored with recording on.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "recording/recorder.h"
#include "reheap/recording.h"

namespace reheap::detail::recording {

// `options.mode` is kFile or kRing. `errors` counts recordings stopped by an error (the
// runtime's RuntimeStats::recording_errors); it outlives the recorder.
std::unique_ptr<Recorder> make_recorder(const RecordingOptions& options, std::atomic<std::uint64_t>& errors);

// Throws std::invalid_argument, naming `operation` and the problem, if `options` cannot record: a
// kFile recording without a directory, or a directory (kFile, or kRing's for crash bundles) that
// cannot be created or written. Checked when the reactor is spawned or restored, so that a
// misconfigured recording refuses the reactor instead of letting it run unrecorded.
void require_recordable(const RecordingOptions& options, const char* operation);

// The options a spawn asked for, with kInherit resolved to the runtime's default (a reference:
// a copy would copy the directory's path at every spawn).
inline const RecordingOptions& resolve(const RecordingOptions& spawn, const RecordingOptions& runtime) {
  return spawn.mode == RecordingMode::kInherit ? runtime : spawn;
}

}  // namespace reheap::detail::recording
