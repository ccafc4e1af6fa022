// RecordedLog: a recording's log, read whole and grouped by event, as a replay consumes it.
//
// A log is a flat sequence of records (recording_log.h): an input record opens each event, and
// the answers, outputs, the state digest and the failure mark of that event follow it. A replay
// needs them per event - to deliver the input, to answer the hook's questions in order, and to
// check what is left when the hook returns - and needs to go back (seek), so the log is read once,
// checked by LogReader on the way, and kept in memory as one RecordedLogEvent per event. Records
// that come before the first input record of the log (a block's records can only follow an
// input) would have no event to belong to: the reader refuses such a log as kCorrupt.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "recording/crash_manifest.h"  // runtime/src
#include "reheap/chunk_placement.h"
#include "reheap/recording_log.h"

namespace reheap::testing::detail {

struct RecordedLogEvent {
  std::uint64_t index = 0;
  LogRecord input;                  // kStart .. kStop
  std::vector<LogRecord> answers;   // kinds 32..49, in call order
  std::vector<ChunkRun> chunks;     // kChunk: the zone chunks the heap took, in order
  std::optional<std::uint64_t> state_digest;  // kStateHash
  bool failed = false;              // kEventFailed: its hook threw
  std::string failed_hook;
  std::string failed_what;
};

struct RecordedLog {
  std::filesystem::path where;  // the file or directory it was read from
  LogHeader header;
  std::vector<RecordedLogEvent> events;  // indices header.events_before + 1, + 2, ...

  std::uint64_t last_index() const noexcept { return header.events_before + events.size(); }
  // The event `index` (which must lie in (events_before, last_index()]).
  const RecordedLogEvent& at(std::uint64_t index) const { return events.at(index - header.events_before - 1); }
};

// Reads `file_or_directory` (a log file or a directory of log-*.rlog segments). Throws
// RecordingError as LogReader does, and kCorrupt for a record outside any event.
RecordedLog read_recorded_log(const std::filesystem::path& file_or_directory);

// Reads the log of the crash bundle `bundle`, whose manifest is `manifest`, and holds it to the
// manifest (recording/crash_manifest.h): kMismatch for a log of another build, recording or
// reactor, kIncomplete for one that does not reach the failing event or does not mark it failed
// (a log cut inside a block, which LogReader calls kTruncated, is such a log too).
RecordedLog read_bundle_log(const std::filesystem::path& bundle, const reheap::detail::recording::CrashManifest& manifest);

// "a message of type 0x… from reactor 12", "timer 3", ...: an input record, for reports.
std::string describe_input(const LogRecord& input);

}  // namespace reheap::testing::detail
