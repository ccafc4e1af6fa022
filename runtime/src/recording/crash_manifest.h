// Reading a crash bundle's manifest.json (RECORDING_FORMAT.md, "Crash bundles"), and what a
// bundle's log must hold for the failure the manifest names to be replayable. Replay::open of a
// bundle, replay_main_if_asked (through it) and `reheap-snap replay` all read bundles here.
//
// The writer is crash_bundle.cpp: one flat JSON object of strings and integers, which is all this
// reader accepts. A bundle may come from elsewhere, so the reader trusts nothing in it: the file
// is read as a regular file of at most kMaxManifestBytes (recording_file.h), every field is checked
// for its type and range, a key may appear once, and the anchor must be a file name inside the
// bundle. Every error is a RecordingError naming manifest.json and the field or byte at fault.
//
// A bundle is replayable only when its log reaches the failing event the manifest names and marks
// that event, and no earlier one, failed (the kEventFailed record): a log cut short - at a block
// boundary, even after its header alone - replays without the failure and would pass for a fixed
// program. Such a bundle is kIncomplete, never a pass.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "recording/crash_bundle.h"
#include "reheap/recording_log.h"

namespace reheap::detail::recording {

// A manifest is a few hundred bytes; the failure's what() is its only free-length field.
inline constexpr std::uint64_t kMaxManifestBytes = std::uint64_t{1} << 20;

// Throws RecordingError: kIo (unreadable, not a regular file, too large), kNotARecording (not a
// crash bundle manifest), kVersion, kCorrupt (malformed JSON, a field of the wrong type or out of
// range, a missing failing_event or anchor, an anchor that is not a plain file name).
CrashManifest read_crash_manifest(const std::filesystem::path& file);

// How far a bundle's log goes, as far as its failure is concerned.
struct BundleLogReach {
  std::uint64_t events_before = 0;  // the anchor's event count (the log header's)
  std::uint64_t last_event = 0;     // the log's last event (events_before when it has none)
  std::uint64_t first_failed = 0;   // the first event marked failed, 0 if none
};

// "" when the log can replay the manifest's failure; otherwise why not, a sentence for a
// RecordingError(kIncomplete) on the log ("the log ends at event 3, before ...").
std::string bundle_log_shortfall(const CrashManifest& manifest, const BundleLogReach& reach);

// The kIncomplete error for a bundle's log that LogReader found cut inside a block (kTruncated):
// the bundle ends before its failure, like one cut at a block boundary.
RecordingError bundle_log_cut(const RecordingError& truncated, const CrashManifest& manifest);

// "" when the log's header is of the recording the manifest describes (its build, recording and
// reactor, as far as the manifest names them); otherwise the difference, for kMismatch.
std::string bundle_log_mismatch(const CrashManifest& manifest, const LogHeader& header);

}  // namespace reheap::detail::recording
