// ExactRestart (see exact_restart.h).
#include "replay/exact_restart.h"

#include <stdexcept>

#include "checkpoint/reactor_snapshot.h"
#include "reactor/host_slot.h"
#include "reactor/reactor_access.h"
#include "reactor/reactor_scope.h"
#include "reheap/byte_stream.h"
#include "reheap/heap_digest.h"
#include "reheap/heap_scope.h"
#include "replay/recorded_input.h"

namespace reheap::detail::replay {
namespace {

// Events of a restart are checked after every few: a clock read per event would cost more than
// most events.
constexpr unsigned kEventsBetweenClockReads = 16;

// The snapshot the restart starts from: the anchor, or the reactor's last Runtime::snapshot file
// when it belongs to the same recording and lies between the anchor and the failing event (fewer
// events to replay).
std::filesystem::path newer_snapshot(const Cell* c, const RestartSource& s, std::uint64_t* events) {
  if (c->snap.last_snapshot.empty()) return {};
  try {
    const SavedReactor saved = read_saved_reactor(c->snap.last_snapshot);
    if (saved.recording_id != s.recording_id || saved.self != c->ref() || saved.events < s.anchor_events ||
        saved.events >= s.failing_event) {
      return {};
    }
    *events = saved.events;
    return c->snap.last_snapshot;
  } catch (const std::exception&) {
    return {};  // unreadable: the anchor will do
  }
}

}  // namespace

ExactRestart::ExactRestart(Cell* c, RestartSource source, Runtime& runtime)
    : cell_(c), source_(std::move(source)), host_(ReplayHostOptions{.runtime = &runtime}), chunks_(true) {
  HeapScope system(nullptr);
  const ActorRef ref = c->ref();
  // The failed heap's chunks pass straight to the restored one; those the snapshot does not hold
  // wait in the zone's quarantine for the replay to take again (the log names them).
  HeapPtr failed = std::move(c->heap);
  c->reactor = nullptr;
  c->snap.snapshotter.reset();
  std::uint64_t newer_events = 0;
  const std::filesystem::path newer = newer_snapshot(c, source_, &newer_events);
  HeapPtr heap;
  if (!newer.empty()) {
    started_from_ = newer;
    heap = restore_replacing(std::move(failed), newer);
  } else if (!source_.anchor_file.empty()) {
    started_from_ = source_.anchor_file;
    heap = restore_replacing(std::move(failed), source_.anchor_file);
  } else {
    started_from_ = "<the ring recording's anchor in memory>";
    MemorySource anchor(source_.anchor_bytes.data(), source_.anchor_bytes.size());
    heap = restore_replacing(std::move(failed), anchor);
  }
  Reactor* r = reactor_of(*heap, started_from_);
  if (ReactorAccess::self(*r) != ref || ReactorAccess::recording_id(*r) != source_.recording_id) {
    throw std::runtime_error(started_from_.string() + " holds another reactor or recording than the one restarting");
  }
  start_events_ = ReactorAccess::events(*r);
  {
    // What the runtime wrote into the heap for the snapshot and cleared right after it, as the
    // recorded run did (reactor_snapshot.cpp).
    const HeapScope in_heap(*heap);
    ReactorAccess::saved_timers(*r).clear();
    ReactorAccess::saved_sockets(*r).clear();
  }
  c->heap = std::move(heap);
  c->reactor = r;
  if (!newer.empty()) {
    c->snap.snapshotter = std::make_unique<Snapshotter>(*c->heap, WriteTracking::kAuto);
    c->snap.tracks = true;
    c->snap.snapshotter->attach(newer);
  }

  if (!source_.log_directory.empty()) {
    reader_ = std::make_unique<LogReader>(source_.log_directory);
  } else {
    reader_ = std::make_unique<LogReader>(std::move(source_.log_bytes), "<the ring recording's log in memory>");
  }
  const std::filesystem::path where =
      source_.log_directory.empty() ? std::filesystem::path("<ring log>") : source_.log_directory;
  events_ = std::make_unique<EventReader>(*reader_, where);
  if (reader_->header().recording_id != source_.recording_id) {
    throw std::runtime_error(where.string() + " is the log of another recording");
  }
  set_chunk_placement(*c->heap, &chunks_);
}

ExactRestart::~ExactRestart() {
  if (cell_->heap != nullptr && chunk_placement(*cell_->heap) == &chunks_) set_chunk_placement(*cell_->heap, nullptr);
}

void ExactRestart::fail(const RecordedLogEvent& e, const std::string& why) const {
  const HeapScope system(nullptr);
  throw std::runtime_error("the replay of event " + std::to_string(e.index) + " (" + describe_input(e.input) +
                           ") departed from its recording: " + why);
}

bool ExactRestart::run(std::chrono::steady_clock::time_point until) {
  for (unsigned n = 1;; ++n) {
    const std::uint64_t position = ReactorAccess::events(*cell_->reactor);
    if (position + 1 >= source_.failing_event) {
      set_chunk_placement(*cell_->heap, nullptr);
      return true;
    }
    {
      const HeapScope system(nullptr);
      if (!events_->next(next_)) {
        throw std::runtime_error("the recording's log ends after event " + std::to_string(reader_->position()) +
                                 ", before the failing event " + std::to_string(source_.failing_event));
      }
    }
    if (next_.index <= position) continue;  // before the snapshot the restart started from
    if (next_.index != position + 1) {
      throw std::runtime_error("the recording's log skips from event " + std::to_string(position) + " to event " +
                               std::to_string(next_.index));
    }
    replay(next_);
    if (n % kEventsBetweenClockReads == 0 && std::chrono::steady_clock::now() >= until) return false;
  }
}

void ExactRestart::replay(const RecordedLogEvent& e) {
  const LogRecord& in = e.input;
  if (e.failed) fail(e, "its recorded hook threw, and only the failing event's may");
  const RecordedInput input(in);
  Reactor& reactor = *cell_->reactor;
  host_.begin(e, reactor, false);
  chunks_.begin(e);
  if (in.kind == RecordKind::kAccept) host_.socket_seen(in.connection);  // the runtime minted it
  bool threw = false;
  std::string what;
  {
    ReactorScope scope(cell_);
    const HostSlotScope door(&host_, &reactor);
    ReactorAccess::events(reactor)++;
    try {
      deliver_to(reactor, input.event());
    } catch (const AbortEvent&) {
      // A divergence: the host wrote it down.
    } catch (const std::exception& x) {
      const HeapScope system(nullptr);
      threw = true;
      what = x.what();
    } catch (...) {
      threw = true;
      what = "an exception not derived from std::exception";
    }
  }
  // The recorded digest was taken right after the hook; then the runtime wrote into the heap for
  // a snapshot, if it did (outside_state), as it is written again here.
  std::optional<std::uint64_t> digest;
  if (e.state_digest) digest = state_digest(*cell_->heap);  // its own log: the current version
  if (!threw && !host_.divergence() && !e.outside.empty()) {
    ReactorScope scope(cell_);
    for (const LogRecord& outside : e.outside) rewrite_outside_state(reactor, outside);
  }
  chunks_.end();
  if (const auto& refusal = chunks_.refusal()) {
    try {
      throw_refusal(*refusal, started_from_, cell_->heap->id());
    } catch (const std::exception& x) {
      fail(e, x.what());
    }
  }
  if (!host_.divergence() && !threw) host_.finish();
  if (const auto& note = host_.divergence()) {
    fail(e, "expected (recorded) " + note->expected + ", got " + note->actual);
  }
  if (threw) fail(e, std::string(hook_name(input.event().kind)) + " threw where the recorded one returned: " + what);
  // The restart runs in the recording process: its state digests compare whatever the layout.
  if (digest && *digest != *e.state_digest) {
    fail(e, "the heap after it is not the recorded one (state digest)");
  }
}

void ExactRestart::defer(const Event& event) {
  const HeapScope system(nullptr);
  Deferred& d = deferred_.emplace_back();
  d.event = event;
  d.event.message = nullptr;  // sockets and timers only: messages wait in the mailbox
  if (event.kind == EventKind::kData) d.data.assign(event.data.data(), event.data.size());
}

std::vector<ExactRestart::Deferred> ExactRestart::take_deferred() {
  std::vector<Deferred> out = std::move(deferred_);
  for (Deferred& d : out) {
    if (d.event.kind == EventKind::kData) d.event.data = std::span<const char>(d.data.data(), d.data.size());
  }
  return out;
}

}  // namespace reheap::detail::replay

namespace reheap::detail {

void ExactRestartDeleter::operator()(replay::ExactRestart* restart) const noexcept { delete restart; }

}  // namespace reheap::detail
