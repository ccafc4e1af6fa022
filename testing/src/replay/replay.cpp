// Replay: opening a recording, its snapshots, seeking, and the hand-over to a TestRuntime (see
// replay.h). Delivering events and reporting divergences is replay_step.cpp's.
#include "reheap/testing/replay.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <stdexcept>

#include "../test_runtime_impl.h"
#include "checkpoint/reactor_snapshot.h"  // runtime/src: reactor_of
#include "reactor/reactor_access.h"    // runtime/src
#include "recording/crash_manifest.h"  // runtime/src
#include "reheap/chunk_placement.h"
#include "reheap/heap_scope.h"
#include "reheap/program_layout.h"
#include "reheap/snapshot.h"
#include "reheap/snapshot_file.h"
#include "reheap/testing/virtual_clock.h"
#include "replay_impl.h"

namespace reheap::testing {

using reheap::detail::ReactorAccess;

namespace {

// The base-<n>.snap with the largest n in `directory`, or "" if none.
std::filesystem::path newest_anchor(const std::filesystem::path& directory) {
  std::filesystem::path best;
  std::uint64_t best_n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= 10 || name.rfind("base-", 0) != 0 || name.substr(name.size() - 5) != ".snap") continue;
    const std::string digits = name.substr(5, name.size() - 10);
    std::uint64_t n = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (error != std::errc() || end != digits.data() + digits.size()) continue;  // not one of ours
    if (best.empty() || n > best_n) {
      best = entry.path();
      best_n = n;
    }
  }
  return best;
}

std::string hex(std::uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

// Restores `file` only to read which reactor, recording and event count it holds.
// Which reactor and event a snapshot holds, from its run records and the reactor's own bytes:
// restoring each one in full to ask took seconds per GiB. Its pages are checked when a seek
// restores it.
detail::StartPoint probe_snapshot(const std::filesystem::path& file, const LogHeader& log,
                                  const std::filesystem::path& log_where) {
  const HeapScope system(nullptr);
  const reheap::detail::SavedReactor saved = reheap::detail::read_saved_reactor(file);
  if (saved.recording_id != log.recording_id || saved.self != log.actor) {
    throw RecordingError(RecordingErrc::kMismatch, file, saved.events,
                         "the snapshot is not of this recording: it holds reactor " + std::to_string(saved.self.value()) +
                             " of recording " + hex(saved.recording_id) + ", the log " + log_where.string() +
                             " is of reactor " + std::to_string(log.actor.value()) + ", recording " +
                             hex(log.recording_id));
  }
  return detail::StartPoint{file, saved.events};
}

}  // namespace

const char* to_string(DivergenceKind kind) noexcept {
  switch (kind) {
    case DivergenceKind::kOutput:
      return "another output or question than the recorded one";
    case DivergenceKind::kMissingOutput:
      return "a recorded output or question did not happen";
    case DivergenceKind::kExtraOutput:
      return "an output or question the recording does not have";
    case DivergenceKind::kState:
      return "the heap differs from the recorded one";
    case DivergenceKind::kFailure:
      return "the hook threw where the recorded one did not";
  }
  return "?";
}

Divergence::Divergence(DivergenceKind kind, std::uint64_t event, EventKind event_kind, std::string expected,
                       std::string actual, const std::string& report)
    : std::runtime_error(report),
      kind_(kind),
      event_(event),
      event_kind_(event_kind),
      expected_(std::move(expected)),
      actual_(std::move(actual)) {}

Replay::Replay(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
Replay::~Replay() {
  if (impl_ && impl_->heap) {
    // Region-style, as a TestRuntime's failed reactors go: the heap is freed whole, and no
    // destructor of the reactor runs (it might send, and nothing leaves a replay).
    const HeapScope system(nullptr);
    set_chunk_placement(*impl_->heap, nullptr);
    impl_->heap.reset();
  }
}
Replay::Replay(Replay&&) noexcept = default;
Replay& Replay::operator=(Replay&&) noexcept = default;

Replay Replay::open(const std::filesystem::path& path, const ReplayOptions& options) {
  const HeapScope system(nullptr);
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->options = options;
  std::error_code missing;
  if (!std::filesystem::exists(path, missing)) {
    throw RecordingError(RecordingErrc::kNotARecording, path, 0, "does not exist");
  }
  if (!std::filesystem::is_directory(path)) {
    throw RecordingError(RecordingErrc::kNotARecording, path, 0,
                         "not a recording directory (reactor-<ref>/ with base-<n>.snap and log-*.rlog) nor a "
                         "crash bundle (crash-<event>/)");
  }
  // Whatever stands under the name manifest.json - a dangling link, a FIFO - makes the directory a
  // crash bundle: one whose manifest cannot be read is refused, never replayed as a plain
  // recording, which would not hold the log to the failing event the manifest names.
  std::optional<reheap::detail::recording::CrashManifest> manifest;
  std::error_code no_manifest;
  if (std::filesystem::symlink_status(path / "manifest.json", no_manifest).type() !=
      std::filesystem::file_type::not_found) {
    manifest = reheap::detail::recording::read_crash_manifest(path / "manifest.json");
  }

  std::filesystem::path anchor = options.anchor;
  if (anchor.empty()) anchor = manifest ? path / manifest->anchor : newest_anchor(path);
  std::error_code no_anchor;
  if (manifest && options.anchor.empty() &&
      std::filesystem::symlink_status(anchor, no_anchor).type() == std::filesystem::file_type::not_found) {
    throw RecordingError(RecordingErrc::kNotARecording, anchor, 0,
                         "the crash bundle's anchor snapshot (manifest.json's \"anchor\") does not exist");
  }
  if (anchor.empty() || !std::filesystem::exists(anchor)) {
    // RecordingOptions::directory itself is the natural first try: name what it holds.
    std::string inside;
    std::error_code unreadable;
    for (const auto& entry : std::filesystem::directory_iterator(path, unreadable)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("reactor-", 0) == 0 && entry.is_directory()) inside += (inside.empty() ? "" : ", ") + name;
    }
    throw RecordingError(RecordingErrc::kNotARecording, anchor.empty() ? path : anchor, 0,
                         "the recording has no anchor snapshot (base-<n>.snap)" +
                             (inside.empty() ? std::string()
                                             : "; this is a RecordingOptions::directory: open one of its "
                                               "recordings (" + inside + ") or a crash-<event>/ in one"));
  }
  impl->log = manifest ? detail::read_bundle_log(path, *manifest) : detail::read_recorded_log(path);
  const LogHeader& header = impl->log.header;
  if (!impl->log.end.note.empty()) {
    // The recording process was killed while it wrote: the replay ends at the last whole event.
    impl->warnings.push_back("the log ends after event " + std::to_string(impl->log.last_index()) + ": " +
                             impl->log.end.note);
  }

  if (header.build_id != program_build_id()) {
    const std::string difference = "the log was recorded by build " +
                                   (header.build_id.empty() ? std::string("(none)") : header.build_id) +
                                   ", this program is build " +
                                   (program_build_id().empty() ? std::string("(none)") : program_build_id());
    if (options.refuse_other_build) {
      throw RecordingError(RecordingErrc::kMismatch, path, header.events_before,
                           difference + " (ReplayOptions::refuse_other_build is set)");
    }
    impl->warnings.push_back(difference + ": replayed anyway (the anchor is relocated to this build; a replay "
                                          "of a changed program may diverge)");
  }

  // The anchor first: it must be the snapshot the log continues.
  const detail::StartPoint first = probe_snapshot(anchor, header, path);
  if (first.events < header.events_before || first.events > impl->log.last_index()) {
    throw RecordingError(RecordingErrc::kMismatch, anchor, first.events,
                         "the snapshot holds the reactor after event " + std::to_string(first.events) +
                             ", the log " + path.string() + " holds events " +
                             std::to_string(header.events_before + 1) + " to " +
                             std::to_string(impl->log.last_index()));
  }
  impl->starts.push_back(first);
  for (const std::filesystem::path& file : options.snapshots) {
    const detail::StartPoint p = probe_snapshot(file, header, path);
    if (p.events < header.events_before || p.events > impl->log.last_index()) {
      throw RecordingError(RecordingErrc::kMismatch, file, p.events,
                           "the snapshot holds the reactor after event " + std::to_string(p.events) +
                               ", outside the log's events " + std::to_string(header.events_before + 1) + " to " +
                               std::to_string(impl->log.last_index()));
    }
    impl->starts.push_back(p);
  }
  std::stable_sort(impl->starts.begin(), impl->starts.end(),
                   [](const detail::StartPoint& a, const detail::StartPoint& b) { return a.events < b.events; });

  for (const detail::RecordedLogEvent& e : impl->log.events) {
    RecordedEvent r;
    r.index = e.index;
    r.kind = static_cast<EventKind>(e.input.kind);
    r.sender = e.input.kind == RecordKind::kMessage ? e.input.ref : ActorRef();
    r.type_id = e.input.type_id;
    r.timer = e.input.kind == RecordKind::kTimer ? e.input.id : 0;
    r.socket = e.input.kind == RecordKind::kTimer ? 0 : e.input.id;
    r.failed = e.failed;
    if (e.failed && !impl->failing_event) impl->failing_event = e.index;
    impl->events.push_back(r);
  }

  // Digests of format version 5 on name the heap's program pointers by what they point to, so they
  // compare in any binary the anchor restores into; older ones only where the pointers are the
  // recording's.
  impl->portable_digests = header.version >= kPortableStateDigestVersion;
  const bool has_digests = std::any_of(impl->log.events.begin(), impl->log.events.end(),
                                       [](const detail::RecordedLogEvent& e) { return e.state_digest.has_value(); });
  if (!has_digests) {
    impl->state_note = "the recording has no state digests (RecordingOptions::state_hash_every was 0)";
  } else if (!options.check_state) {
    impl->state_note = "state digests are not compared (ReplayOptions::check_state is off)";
  } else if (impl->portable_digests) {
    impl->compare_state = true;
  } else {
    // Only the differences: a restore's advice (kRelocate) does not apply, a replay relocates already.
    const std::vector<std::string> mismatches =
        layout_mismatches(read_snapshot_header(anchor).layout, current_program_layout(), LayoutCheck::kStrict);
    if (mismatches.empty()) {
      impl->compare_state = true;
    } else {
      // One line: replay_main prints each warning as a line of its own.
      std::string differences;
      for (const std::string& line : mismatches) differences += (differences.empty() ? "" : "; ") + line;
      impl->state_note =
          "state digests are not compared: the log is of recording format version " +
          std::to_string(header.version) + ", whose digests hash the heap's pointers into the program as they "
          "are, and this program is not laid out as the recording one was (" + differences +
          "); to compare them, replay in the recording binary with ASLR off (reheap::reexec_without_aslr first "
          "thing in main, or `setarch -R`), or record again with this version";
      impl->warnings.push_back(impl->state_note);
    }
  }

  // Format version 1 did not record where the heap took new zone chunks.
  impl->chunks = std::make_unique<detail::ChunkPlan>(header.version >= 2);
  if (header.version < 2) {
    impl->warnings.push_back(
        "the log is of recording format version " + std::to_string(header.version) +
        ", which does not say where the heap took new zone chunks: this process's zone places them, so from an "
        "event that takes one (a first page run, a huge block, a size class past 2 MiB) the heap may lie elsewhere "
        "and its digest differ");
  }
  detail::ReplayHostOptions host;
  host.first_system_now = VirtualClock::kSystemEpoch;
  host.first_steady_now = VirtualClock::kSteadyEpoch;
  host.keep_sends = true;
  impl->host = std::make_unique<detail::ReplayHost>(host);
  impl->restore(first);
  return Replay(std::move(impl));
}

void Replay::Impl::restore(const detail::StartPoint& start) {
  const HeapScope system(nullptr);
  reactor = nullptr;
  if (heap) set_chunk_placement(*heap, nullptr);
  heap.reset();
  heap = reheap::restore(start.file);
  set_chunk_placement(*heap, chunks.get());
  reactor = reheap::detail::reactor_of(*heap, start.file);
  position = ReactorAccess::events(*reactor);
  stopped.clear();
  last_state_match.reset();
  // What a worker writes into the heap for a snapshot and clears after it: the armed timers are
  // the replay host's now (the log says when they fire), the sockets are gone.
  std::map<TimerId, detail::ArmedTimer>& armed = host->armed_timers();
  armed.clear();
  for (const ReactorAccess::SavedTimer& t : ReactorAccess::saved_timers(*reactor)) {
    armed[t.id] = detail::ArmedTimer{std::chrono::nanoseconds(t.due_in_ns), std::chrono::nanoseconds(t.period_ns)};
  }
  {
    const HeapScope in_heap(*heap);
    ReactorAccess::saved_timers(*reactor).clear();
    ReactorAccess::saved_sockets(*reactor).clear();
  }
  std::erase_if(sends, [&](const ReplayedSend& s) { return s.event > position; });
}

ActorRef Replay::reactor_ref() const noexcept { return impl_->log.header.actor; }
std::uint64_t Replay::recording_id() const noexcept { return impl_->log.header.recording_id; }
const std::string& Replay::recorded_by_build() const noexcept { return impl_->log.header.build_id; }
bool Replay::same_build() const noexcept { return impl_->log.header.build_id == program_build_id(); }
std::uint64_t Replay::anchor_events() const noexcept { return impl_->log.header.events_before; }
std::uint64_t Replay::recorded_events() const noexcept { return impl_->log.last_index(); }
const std::vector<RecordedEvent>& Replay::events() const noexcept { return impl_->events; }
std::optional<std::uint64_t> Replay::failing_event() const noexcept { return impl_->failing_event; }
bool Replay::compares_state() const noexcept { return impl_->compare_state; }
const std::vector<std::string>& Replay::warnings() const noexcept { return impl_->warnings; }
std::uint64_t Replay::position() const noexcept { return impl_->position; }
bool Replay::at_end() const noexcept { return impl_->position >= impl_->log.last_index(); }
std::chrono::nanoseconds Replay::last_seek_duration() const noexcept { return impl_->last_seek; }
std::optional<std::uint64_t> Replay::last_seek_restored() const noexcept { return impl_->last_seek_restored; }
const std::vector<ReplayedSend>& Replay::sends() const noexcept { return impl_->sends; }

Reactor& Replay::reactor_base() {
  if (impl_->reactor == nullptr) {
    throw std::logic_error("reheap::testing::Replay: the reactor was handed over to a TestRuntime (continue_in)");
  }
  return *impl_->reactor;
}

Heap& Replay::heap() {
  reactor_base();
  return *impl_->heap;
}

using Use = detail::ExclusiveUse::Scope;

bool Replay::step() {
  Use use(impl_->use, "Replay::step");
  if (impl_->reactor == nullptr) reactor_base();
  if (!impl_->stopped.empty()) {
    throw std::logic_error("reheap::testing::Replay: stopped at event " + std::to_string(impl_->position) + " (" +
                           impl_->stopped + "); seek() back to replay again");
  }
  if (at_end()) return false;
  impl_->deliver_next();
  return true;
}

std::uint64_t Replay::run() {
  Use use(impl_->use, "Replay::run");
  std::uint64_t n = 0;
  while (step()) ++n;
  return n;
}

void Replay::run_to(std::uint64_t event) {
  Use use(impl_->use, "Replay::run_to");
  if (event > recorded_events()) {
    throw std::out_of_range("reheap::testing::Replay::run_to(" + std::to_string(event) + "): the log ends at event " +
                            std::to_string(recorded_events()));
  }
  if (event < impl_->position) {
    throw std::logic_error("reheap::testing::Replay::run_to(" + std::to_string(event) + "): the replay is at event " +
                           std::to_string(impl_->position) + " already; seek() goes back");
  }
  while (impl_->position < event) step();
}

bool Replay::run_until(const std::function<bool()>& pred) {
  Use use(impl_->use, "Replay::run_until");
  for (;;) {
    if (pred()) return true;
    if (!step()) return pred();
  }
}

void Replay::seek(std::uint64_t event) {
  Use use(impl_->use, "Replay::seek");
  const auto began = std::chrono::steady_clock::now();
  if (event < impl_->starts.front().events || event > recorded_events()) {
    throw std::out_of_range("reheap::testing::Replay::seek(" + std::to_string(event) + "): the replay can reach events " +
                            std::to_string(impl_->starts.front().events) + " to " + std::to_string(recorded_events()));
  }
  const detail::StartPoint* best = &impl_->starts.front();
  for (const detail::StartPoint& s : impl_->starts) {
    if (s.events <= event) best = &s;
  }
  // Going forward from where the replay stands beats a restore when no snapshot is nearer.
  const bool forward = impl_->reactor != nullptr && impl_->stopped.empty() && impl_->position <= event &&
                       impl_->position >= best->events;
  impl_->last_seek_restored.reset();
  if (!forward) {
    impl_->restore(*best);
    impl_->last_seek_restored = best->events;
  }
  run_to(event);
  impl_->last_seek = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - began);
}

ActorRef Replay::continue_in(TestRuntime& runtime) {
  Use use(impl_->use, "Replay::continue_in");
  Use runtime_use(runtime.impl_->use, "Replay::continue_in");
  reactor_base();
  if (!impl_->stopped.empty()) {
    throw std::logic_error("reheap::testing::Replay::continue_in: the replay stopped (" + impl_->stopped +
                           "): the reactor's state is not the recorded one");
  }
  const HeapScope system(nullptr);
  // From here on the reactor takes new inputs: its heap's chunks go where the zone places them.
  set_chunk_placement(*impl_->heap, nullptr);
  TestRuntime::Impl& rt = *runtime.impl_;
  const ActorRef ref = rt.admit(std::move(impl_->heap), impl_->reactor, SpawnOptions{}, true);
  // admit() readies a restored reactor for on_restored; this one is live, mid-run.
  detail::Entry& entry = *rt.find(ref);
  entry.state = detail::ReactorState::kLive;
  entry.restored = false;
  rt.starts.erase(std::find(rt.starts.begin(), rt.starts.end(), ref));
  for (const auto& [id, timer] : impl_->host->armed_timers()) {
    rt.timers.insert(detail::Timer{rt.clock.elapsed() + timer.delay, id, ref, timer.period});
  }
  impl_->reactor = nullptr;
  return ref;
}

}  // namespace reheap::testing
