// ChunkPlan (see chunk_plan.h).
#include "replay/chunk_plan.h"

#include <cstdio>

#include "reheap/heap_scope.h"
#include "reheap/recording_log.h"
#include "reheap/zone.h"

namespace reheap::detail::replay {
namespace {

const char* half_name(ChunkHalf half) noexcept { return half == ChunkHalf::kClass ? "class" : "large"; }

std::string describe(const ChunkRun& run) {
  return std::to_string(run.count) + (run.count == 1 ? " chunk" : " chunks") + " of the " + half_name(run.half) +
         " half from chunk " + std::to_string(run.first);
}

}  // namespace

void ChunkPlan::begin(const RecordedLogEvent& e) noexcept {
  event_ = recorded_ ? &e : nullptr;
  next_ = 0;
  named_.reset();
  refusal_.reset();
}

void ChunkPlan::end() noexcept {
  if (event_ != nullptr) {
    for (; next_ < event_->chunks.size(); ++next_) note(event_->chunks[next_], true);
  }
  event_ = nullptr;
  named_.reset();
}

std::optional<std::uint64_t> ChunkPlan::place(ChunkHalf half, std::uint64_t count) noexcept {
  named_.reset();
  if (event_ == nullptr) return std::nullopt;
  if (next_ < event_->chunks.size() && event_->chunks[next_].half == half && event_->chunks[next_].count == count) {
    named_ = event_->chunks[next_].first;
    return named_;
  }
  return std::nullopt;  // taken() notes the departure
}

void ChunkPlan::taken(const ChunkRun& run) noexcept {
  if (event_ == nullptr) return;
  if (named_ && *named_ == run.first) {
    ++next_;
  } else {
    note(run, false);
  }
  named_.reset();
}

void ChunkPlan::refused(const ChunkRun& run, const ChunkRefusal& why) noexcept {
  if (!refusal_) refusal_ = Refusal{event_ != nullptr ? event_->index : 0, run, why};
  named_.reset();
}

void ChunkPlan::note(const ChunkRun& run, bool recorded_only) noexcept {
  const HeapScope system(nullptr);
  try {
    departures_.push_back(Departure{event_->index, run, recorded_only});
  } catch (...) {
    // A note lost to a full system heap: the state digest still tells the departure.
  }
}

std::vector<std::string> ChunkPlan::take_notes() {
  const HeapScope system(nullptr);
  std::vector<std::string> notes;
  for (const Departure& d : departures_) {
    notes.push_back("event " + std::to_string(d.event) + ": " +
                    (d.recorded_only
                         ? "the recording took " + describe(d.run) + ", which the replayed heap did not ask for"
                         : "the replayed heap took " + std::to_string(d.run.count) + " chunk(s) of the " +
                               half_name(d.run.half) +
                               " half that the recording did not take there; this process's zone placed them "
                               "(at chunk " + std::to_string(d.run.first) + ")") +
                    ": the heap departed from the recorded one");
  }
  departures_.clear();
  return notes;
}

void throw_refusal(const ChunkPlan::Refusal& refusal, const std::filesystem::path& log, std::uint64_t own_heap) {
  const HeapScope system(nullptr);
  const ChunkRun& run = refusal.run;
  const ZoneStats zone = Zone::stats();
  char address[96];
  std::snprintf(address, sizeof address, "[%#llx, %#llx)",
                static_cast<unsigned long long>(zone.base + run.first * zone.chunk_size),
                static_cast<unsigned long long>(zone.base + (run.first + run.count) * zone.chunk_size));
  const std::string what = "event " + std::to_string(refusal.event) + ": the recorded heap took " + describe(run);
  if (refusal.why.outside_half) {
    throw RecordingError(RecordingErrc::kCorrupt, log, refusal.event,
                         what + ", which this zone's " + half_name(run.half) +
                             " half does not hold (a damaged or forged log); the replay took nothing and stopped");
  }
  std::string held;
  if (refusal.why.holder == own_heap) {
    held = "the replayed heap itself (id " + std::to_string(own_heap) +
           ") holds it already: the log is damaged or forged, or the replay departed from the recorded allocations "
           "before this event (warnings() says where)";
  } else if (refusal.why.holder != 0) {
    held = "heap " + std::to_string(refusal.why.holder) +
           " of this process holds it, and the replay takes no other heap's memory: replay where that heap does not "
           "exist (destroy it first, or open the replay before creating it)";
  } else {
    held = "the zone could not make it accessible";
  }
  throw RecordingError(RecordingErrc::kChunkInUse, log, refusal.event,
                       what + " at " + address + ", and the replayed heap must take the same chunks; " + held +
                           ". The replay stopped at this event");
}

}  // namespace reheap::detail::replay
