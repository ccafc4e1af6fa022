// RecordedLog: a recording's log grouped by event, as a replay consumes it.
//
// A log is a flat sequence of records (reheap/recording_log.h): an input record opens each event,
// and the answers, outputs, the state digest and the failure mark of that event follow it. A
// replay needs them per event - to deliver the input, to answer the hook's questions in order, and
// to check what is left when the hook returns. EventReader hands out one whole event at a time
// (the runtime's exact restart streams a log it need not hold); RecordedLog keeps them all (a
// test's Replay goes back and forth).
//
// Whole events only: an event is handed out once the next one's input record, or the log's clean
// end, shows that its records are all there. A log that ends inside an event (its process was
// killed while the event ran: LogReader::End) ends at the event before, and says so. Records
// before the first input record would have no event to belong to: such a log is kCorrupt.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "../recording/crash_manifest.h"
#include "reheap/chunk_placement.h"
#include "reheap/recording_log.h"

namespace reheap::detail::replay {

struct RecordedLogEvent {
  std::uint64_t index = 0;
  LogRecord input;                  // kStart .. kAcceptError
  std::vector<LogRecord> answers;   // kinds 32..49, in call order
  std::vector<ChunkRun> chunks;     // kChunk: the zone chunks the heap took, in order
  std::optional<std::uint64_t> state_digest;  // kStateHash
  // kOutsideState: what the runtime wrote into the heap after the hook, before the next event.
  std::vector<LogRecord> outside;
  bool failed = false;              // kEventFailed: its hook threw
  std::string failed_hook;
  std::string failed_what;
};

// Reads whole events from a LogReader (which it does not own). `where` names the log in errors.
class EventReader {
 public:
  EventReader(LogReader& reader, std::filesystem::path where) : reader_(reader), where_(std::move(where)) {}

  // The next whole event into `out`; false at the end of the log (reader().end() says how it
  // ends; an event the log holds only in part is not handed out). Throws RecordingError.
  bool next(RecordedLogEvent& out);
  const LogReader& reader() const noexcept { return reader_; }

 private:
  // Adds `r`, a record that follows an input record, to `e`.
  void add(RecordedLogEvent& e, LogRecord&& r) const;

  LogReader& reader_;
  std::filesystem::path where_;
  LogRecord next_input_;           // read ahead: the input record of the next event
  std::uint64_t next_index_ = 0;   // its index
  bool has_next_input_ = false;
  bool started_ = false;
};

struct RecordedLog {
  std::filesystem::path where;  // the file or directory it was read from
  LogHeader header;
  std::vector<RecordedLogEvent> events;  // indices header.events_before + 1, + 2, ...
  LogReader::End end;                    // how the log ended (a cut or torn end is noted there)

  std::uint64_t last_index() const noexcept { return header.events_before + events.size(); }
  // The event `index` (which must lie in (events_before, last_index()]).
  const RecordedLogEvent& at(std::uint64_t index) const { return events.at(index - header.events_before - 1); }
};

// Reads `file_or_directory` (a log file or a directory of log-*.rlog segments) whole. Throws
// RecordingError as LogReader does, and kCorrupt for a record outside any event.
RecordedLog read_recorded_log(const std::filesystem::path& file_or_directory);

// Reads the log of the crash bundle `bundle`, whose manifest is `manifest`, and holds it to the
// manifest (recording/crash_manifest.h): kMismatch for a log of another build, recording or
// reactor, kIncomplete for one that does not reach the failing event or does not mark it failed
// (a log cut short, whether its end is dropped or a segment before the last is kTruncated, is such
// a log too).
RecordedLog read_bundle_log(const std::filesystem::path& bundle, const reheap::detail::recording::CrashManifest& manifest);

// "a message of type 0x… from reactor 12", "timer 3", ...: an input record, for reports.
std::string describe_input(const LogRecord& input);

}  // namespace reheap::detail::replay
