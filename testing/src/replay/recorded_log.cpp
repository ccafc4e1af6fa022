// RecordedLog (see recorded_log.h).
#include "recorded_log.h"

#include "record_text.h"

namespace reheap::testing::detail {

RecordedLog read_recorded_log(const std::filesystem::path& file_or_directory) {
  RecordedLog log;
  log.where = file_or_directory;
  LogReader reader(file_or_directory);
  log.header = reader.header();
  LogRecord r;
  while (reader.next(r)) {
    if (is_input(r.kind)) {
      RecordedLogEvent& e = log.events.emplace_back();
      e.index = reader.position();
      e.input = std::move(r);
      continue;
    }
    if (log.events.empty()) {
      throw RecordingError(RecordingErrc::kCorrupt, file_or_directory, log.header.events_before,
                           std::string("a ") + to_string(r.kind) +
                               " record comes before the log's first event (an input record)");
    }
    RecordedLogEvent& e = log.events.back();
    if (e.failed) {
      throw RecordingError(RecordingErrc::kCorrupt, file_or_directory, e.index,
                           std::string("a ") + to_string(r.kind) + " record follows the failure of event " +
                               std::to_string(e.index) + " (event_failed must be the event's last record)");
    }
    switch (r.kind) {
      case RecordKind::kStateHash:
        e.state_digest = r.digest;
        break;
      case RecordKind::kChunk:
        // The reader has checked the half and the count; whether the run may be taken is the
        // heap's to check when the replay names it (reheap/chunk_placement.h).
        e.chunks.push_back(ChunkRun{static_cast<ChunkHalf>(r.result), r.id, r.value[0]});
        break;
      case RecordKind::kEventFailed:
        e.failed = true;
        e.failed_hook = r.text;
        e.failed_what = r.detail;
        break;
      default:
        e.answers.push_back(std::move(r));
        break;
    }
  }
  return log;
}

RecordedLog read_bundle_log(const std::filesystem::path& bundle, const reheap::detail::recording::CrashManifest& manifest) {
  using namespace reheap::detail::recording;
  RecordedLog log;
  try {
    log = read_recorded_log(bundle);
  } catch (const RecordingError& e) {
    if (e.code() != RecordingErrc::kTruncated) throw;
    throw bundle_log_cut(e, manifest);
  }
  if (const std::string mismatch = bundle_log_mismatch(manifest, log.header); !mismatch.empty()) {
    throw RecordingError(RecordingErrc::kMismatch, bundle / "manifest.json", log.header.events_before, mismatch);
  }
  BundleLogReach reach;
  reach.events_before = log.header.events_before;
  reach.last_event = log.last_index();
  for (const RecordedLogEvent& e : log.events) {
    if (e.failed) {
      reach.first_failed = e.index;
      break;
    }
  }
  if (const std::string shortfall = bundle_log_shortfall(manifest, reach); !shortfall.empty()) {
    throw RecordingError(RecordingErrc::kIncomplete, bundle, reach.last_event, shortfall);
  }
  return log;
}

std::string describe_input(const LogRecord& input) {
  switch (input.kind) {
    case RecordKind::kStart:
      return "on_start";
    case RecordKind::kRestored:
      return "on_restored";
    case RecordKind::kStop:
      return "on_stop";
    case RecordKind::kMessage:
      return "on_message: a message of type " + type_text(input.type_id) + " (" + std::to_string(input.bytes.size()) +
             " bytes) from " + (input.ref ? "reactor " + std::to_string(input.ref.value()) : "outside any reactor");
    case RecordKind::kTimer:
      return "on_timer: timer " + std::to_string(input.id);
    case RecordKind::kAccept:
      return "on_accept: listener " + std::to_string(input.id) + ", connection " + std::to_string(input.connection);
    case RecordKind::kConnect:
      return "on_connect: socket " + std::to_string(input.id);
    case RecordKind::kData:
      return "on_data: socket " + std::to_string(input.id) + ", " + std::to_string(input.bytes.size()) + " bytes";
    case RecordKind::kClosed:
      return "on_closed: socket " + std::to_string(input.id);
    case RecordKind::kEnd:
      return "on_end: socket " + std::to_string(input.id);
    case RecordKind::kDrained:
      return "on_drained: socket " + std::to_string(input.id);
    case RecordKind::kAcceptError:
      return "on_accept_error: listener " + std::to_string(input.id);
    default:
      return to_string(input.kind);
  }
}

}  // namespace reheap::testing::detail
