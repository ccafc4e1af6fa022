// Checking a crash bundle before a replay (see bundle_check.h).
#include "bundle_check.h"

#include <sys/stat.h>

#include "recording/recording_file.h"  // runtime/src: file_type_name
#include "reheap/snapshot_file.h"

namespace reheap::snap {

namespace recording = detail::recording;

namespace {

// The deadline is looked at every this many records: a clock read per record would cost more
// than the record.
constexpr unsigned kRecordsPerClockRead = 4096;

}  // namespace

CheckedBundle check_bundle(const std::filesystem::path& bundle, std::chrono::steady_clock::time_point deadline) {
  struct stat st {};
  if (::stat(bundle.c_str(), &st) != 0) {
    throw RecordingError(RecordingErrc::kNotARecording, bundle, 0, "does not exist");
  }
  if (!S_ISDIR(st.st_mode)) {
    throw RecordingError(RecordingErrc::kNotARecording, bundle, 0,
                         std::string("is a ") + recording::file_type_name(st.st_mode) +
                             ", not a crash bundle (a crash-<event>/ directory)");
  }
  CheckedBundle out;
  out.manifest_file = bundle / "manifest.json";
  std::error_code no_manifest;
  if (std::filesystem::symlink_status(out.manifest_file, no_manifest).type() ==
      std::filesystem::file_type::not_found) {
    throw RecordingError(RecordingErrc::kNotARecording, bundle, 0, "not a crash bundle (no manifest.json)");
  }
  out.manifest = recording::read_crash_manifest(out.manifest_file);

  // The anchor's header, read as the snapshot library reads it (regular files only): the replay
  // restores it, and a bundle without a usable one is refused before a program runs.
  read_snapshot_header(bundle / out.manifest.anchor);

  const std::string failing = std::to_string(out.manifest.failing_event);
  try {
    LogReader reader(bundle);
    out.log = reader.header();
    if (const std::string mismatch = recording::bundle_log_mismatch(out.manifest, out.log); !mismatch.empty()) {
      throw RecordingError(RecordingErrc::kMismatch, out.manifest_file, 0, mismatch);
    }
    out.reach.events_before = out.log.events_before;
    out.reach.last_event = out.log.events_before;
    LogRecord record;
    for (unsigned n = 1; reader.next(record); ++n) {
      if (is_input(record.kind)) out.reach.last_event = reader.position();
      if (record.kind == RecordKind::kEventFailed && out.reach.first_failed == 0) {
        out.reach.first_failed = reader.position();
      }
      if (n % kRecordsPerClockRead == 0 && std::chrono::steady_clock::now() >= deadline) {
        throw RecordingError(RecordingErrc::kIo, bundle, reader.position(),
                             "the bundle's log was not read within the timeout (--timeout)");
      }
    }
  } catch (const RecordingError& e) {
    if (e.code() != RecordingErrc::kTruncated) throw;
    throw recording::bundle_log_cut(e, out.manifest);
  }
  if (const std::string shortfall = recording::bundle_log_shortfall(out.manifest, out.reach); !shortfall.empty()) {
    throw RecordingError(RecordingErrc::kIncomplete, bundle, out.reach.last_event, shortfall);
  }
  return out;
}

}  // namespace reheap::snap
