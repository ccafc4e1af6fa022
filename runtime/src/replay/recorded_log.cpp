// RecordedLog (see recorded_log.h).
#include "replay/recorded_log.h"

#include "replay/record_text.h"

namespace reheap::detail::replay {

bool EventReader::next(RecordedLogEvent& out) {
  if (!started_) {
    started_ = true;
    LogRecord first;
    if (!reader_.next(first)) return false;
    if (!is_input(first.kind)) {
      throw RecordingError(RecordingErrc::kCorrupt, where_, reader_.header().events_before,
                           std::string("a ") + to_string(first.kind) +
                               " record comes before the log's first event (an input record)");
    }
    next_input_ = std::move(first);
    next_index_ = reader_.position();
    has_next_input_ = true;
  }
  if (!has_next_input_) return false;
  out.index = next_index_;
  out.input = std::move(next_input_);
  out.answers.clear();
  out.chunks.clear();
  out.state_digest.reset();
  out.outside.clear();
  out.failed = false;
  out.failed_hook.clear();
  out.failed_what.clear();
  has_next_input_ = false;
  LogRecord r;
  while (reader_.next(r)) {
    if (is_input(r.kind)) {
      next_input_ = std::move(r);
      next_index_ = reader_.position();
      has_next_input_ = true;
      return true;
    }
    add(out, std::move(r));
  }
  // The log's last event: whole unless the log says it was cut.
  return !reader_.end().event_cut;
}

void EventReader::add(RecordedLogEvent& e, LogRecord&& r) const {
  if (e.failed) {
    throw RecordingError(RecordingErrc::kCorrupt, where_, e.index,
                         std::string("a ") + to_string(r.kind) + " record follows the failure of event " +
                             std::to_string(e.index) + " (event_failed must be the event's last record)");
  }
  switch (r.kind) {
    case RecordKind::kStateHash:
      e.state_digest = r.digest;
      break;
    case RecordKind::kOutsideState: {
      // timers (count, then 3 numbers each), then sockets (count, then ids): checked here, so that
      // applying it never reads past it.
      const std::vector<std::int64_t>& n = r.numbers;
      const auto timers = n.empty() ? std::uint64_t{0} : static_cast<std::uint64_t>(n[0]);
      const bool fits = !n.empty() && timers <= (n.size() - 1) / 3 && 1 + 3 * timers < n.size() &&
                        static_cast<std::uint64_t>(n[1 + 3 * timers]) == n.size() - 2 - 3 * timers;
      if (!fits) {
        throw RecordingError(RecordingErrc::kCorrupt, where_, e.index,
                             "an outside_state record whose counts do not match its numbers");
      }
      e.outside.push_back(std::move(r));
      break;
    }
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

RecordedLog read_recorded_log(const std::filesystem::path& file_or_directory) {
  RecordedLog log;
  log.where = file_or_directory;
  LogReader reader(file_or_directory);
  log.header = reader.header();
  EventReader events(reader, file_or_directory);
  RecordedLogEvent e;
  while (events.next(e)) log.events.push_back(std::move(e));
  log.end = reader.end();
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
    throw RecordingError(RecordingErrc::kIncomplete, bundle, reach.last_event,
                         log.end.note.empty() ? shortfall : shortfall + " (" + log.end.note + ")");
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

}  // namespace reheap::detail::replay
