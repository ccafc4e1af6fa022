// ExactRestart: a recorded reactor restarted under kRestart comes back with exactly the state it
// had just before its failing event (spawn_options.h, "Supervision").
//
// A recorded reactor's recording holds its past: an anchor (a snapshot between two events) and the
// log of every event since, with every answer the runtime gave. So the restart restores the
// newest snapshot of it that the log continues - the anchor, or a later Runtime::snapshot file of
// the same recording - in place of the failed heap, and replays the log's events after it up to,
// and excluding, the failing event, with the replay host (replay_host.h) answering every
// question from the log and letting nothing out: what those events sent, spawned, wrote or
// armed happened already, and stays done. The failing event is not delivered again.
//
// Bounded pauses: the replay runs in slices between the worker's turns (run() with a deadline),
// so the worker's other reactors wait one slice at most, however long the log. Meanwhile the
// reactor is not there for anything else: its messages wait in its mailbox, its timers are
// parked (they keep running, and fire once the restart is done if they came due meanwhile), and
// the events its sockets bring are kept, in order, and delivered after it (defer()).
//
// What the failing event did to the runtime's side of the reactor is undone as far as the
// reactor's state would not know it: timers it started and sockets it opened (ids the restored
// reactor never minted) are closed without a hook, timers it cancelled come back as they were.
// A socket it closed reports on_closed, as a closed socket always does. Sends, spawns, writes and
// snapshot requests stay done.
//
// When the replay cannot be exact - the reactor does not ask what the log answers (it is not
// deterministic: DETERMINISM.md), a recorded zone chunk is taken by another heap meanwhile, a
// state digest differs, the log does not reach the failing event - run() throws, naming the event
// and the reason, and the caller falls back to a restart from the last snapshot.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reactor/cell.h"
#include "recording/recorder.h"
#include "replay/chunk_plan.h"
#include "replay/recorded_log.h"
#include "replay/replay_host.h"

namespace reheap::detail::replay {

class ExactRestart {
 public:
  // Worker thread, right after c's failing event: restores the start point in place of c's failed
  // heap (c->heap and c->reactor are the restored ones on return) and opens the log after it.
  // Throws what makes an exact restart impossible (c then has no heap, as after restore_in_place).
  ExactRestart(Cell* c, RestartSource source, Runtime& runtime);
  ~ExactRestart();
  ExactRestart(const ExactRestart&) = delete;
  ExactRestart& operator=(const ExactRestart&) = delete;

  // Replays events until the one before the failing event has been delivered (true) or `until`
  // has passed (false: call again). Throws std::runtime_error naming the event and the reason
  // when the replay cannot be exact.
  bool run(std::chrono::steady_clock::time_point until);

  // An event of the reactor's sockets that came during the restart, kept for after it.
  void defer(const Event& event);
  // The deferred events, in the order they came (their data owned by the returned object).
  struct Deferred {
    Event event;
    std::string data;  // kData's bytes (event.data points here once taken)
  };
  std::vector<Deferred> take_deferred();

  std::uint64_t start_events() const noexcept { return start_events_; }  // of the restored snapshot
  std::uint64_t failing_event() const noexcept { return source_.failing_event; }
  const std::filesystem::path& started_from() const noexcept { return started_from_; }
  const std::vector<TimerState>& cancelled_timers() const noexcept { return source_.cancelled_timers; }

 private:
  // Delivers `e` to the reactor through the replay host; throws when it departs from the log.
  void replay(const RecordedLogEvent& e);
  [[noreturn]] void fail(const RecordedLogEvent& e, const std::string& why) const;

  Cell* cell_;
  RestartSource source_;
  std::filesystem::path started_from_;
  std::uint64_t start_events_ = 0;
  std::unique_ptr<LogReader> reader_;
  std::unique_ptr<EventReader> events_;
  RecordedLogEvent next_;
  ReplayHost host_;
  ChunkPlan chunks_;
  std::vector<Deferred> deferred_;
};

}  // namespace reheap::detail::replay
