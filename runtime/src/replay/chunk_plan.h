// ChunkPlan: the replayed heap takes the zone chunks the recorded one took (reheap/
// chunk_placement.h, RECORDING_FORMAT.md "chunk").
//
// Where a chunk lands decides the addresses of everything in it, and the zone of the replaying
// process holds other heaps than the recording one did, so first fit would put it elsewhere. The
// log says which runs the recorded heap took during each event, in the order it took them; while
// an event is replayed, the plan hands the heap the event's runs in that order, each to a request
// of the same half and count, and the heap takes exactly that run, as a restore takes a
// snapshot's chunks. Outside events (and in a log of format version 1, which does not say), the
// zone places chunks as for any heap.
//
// Departures. A request the event's runs do not answer (the replay asks for a chunk the recording
// did not take there, or another size) is placed by the zone; a recorded run the replay did not
// ask for is left. Both are noted for the replay's warnings: the heap has departed from the
// recorded one (a changed program; the state digest, when compared, says so at the event).
// A recorded run the heap may not take - one a live heap of this process holds, or one outside
// the half it was asked in (a damaged or forged log) - is refused by the heap, which fails the
// allocation; the plan keeps the refusal for the replay to report after the hook.
//
// Threading and memory: the heap calls the plan inside an allocation, with the replayed heap
// current; the plan allocates only with no heap current, and never throws.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "reheap/chunk_placement.h"
#include "replay/recorded_log.h"

namespace reheap::detail::replay {

class ChunkPlan final : public ChunkPlacement {
 public:
  struct Refusal {
    std::uint64_t event = 0;
    ChunkRun run;
    ChunkRefusal why;
  };

  // `recorded`: whether the log records chunk takes (format version 2 on).
  explicit ChunkPlan(bool recorded) noexcept : recorded_(recorded) {}
  ChunkPlan(const ChunkPlan&) = delete;
  ChunkPlan& operator=(const ChunkPlan&) = delete;

  // Event `e` is delivered next / its hook has returned.
  void begin(const RecordedLogEvent& e) noexcept;
  void end() noexcept;

  // The first refusal since begin(), if any.
  const std::optional<Refusal>& refusal() const noexcept { return refusal_; }
  // The departures noted since the last call, as warning lines.
  std::vector<std::string> take_notes();

  std::optional<std::uint64_t> place(ChunkHalf half, std::uint64_t count) noexcept override;
  void taken(const ChunkRun& run) noexcept override;
  void refused(const ChunkRun& run, const ChunkRefusal& why) noexcept override;

 private:
  struct Departure {
    std::uint64_t event;
    ChunkRun run;
    bool recorded_only;  // the recording took it, the replay did not; else the reverse
  };
  void note(const ChunkRun& run, bool recorded_only) noexcept;

  const bool recorded_;
  const RecordedLogEvent* event_ = nullptr;  // during an event
  std::size_t next_ = 0;                     // the event's next recorded run
  std::optional<std::uint64_t> named_;       // place() named event_->chunks[next_]
  std::optional<Refusal> refusal_;
  std::vector<Departure> departures_;
};

// The replay's error for `refusal` at the event it names (RecordingError: kChunkInUse when a live
// heap holds the run, the replayed heap `own_heap` itself included; kCorrupt when the log names a
// run outside its half of the zone). `log`: where the log was read.
[[noreturn]] void throw_refusal(const ChunkPlan::Refusal& refusal, const std::filesystem::path& log,
                                std::uint64_t own_heap);

}  // namespace reheap::detail::replay
