// Recorder: the recording of one reactor (see reheap/recording.h). The event funnel calls it
// around every event of a recorded reactor; the host it returns wraps the runtime's and writes
// down every answer (and, optionally, a digest of every output) after the event's record.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "io/timer_state.h"
#include "reactor/reactor_host.h"
#include "reheap/event.h"

namespace reheap::detail {

struct Cell;
class LiveHost;

// What a recorded reactor's exact restart reads its past from (replay/exact_restart.h), taken
// from its recorder right after the failing event.
struct RestartSource {
  std::uint64_t recording_id = 0;
  std::uint64_t anchor_events = 0;  // the anchor's event count
  std::uint64_t failing_event = 0;  // the log's last event, whose hook threw
  // kFile: the anchor's file and the directory of its log segments; kRing: both in memory.
  std::filesystem::path anchor_file;
  std::filesystem::path log_directory;
  std::vector<unsigned char> anchor_bytes;
  std::vector<unsigned char> log_bytes;
  // The timers the failing event cancelled, as they were before it.
  std::vector<TimerState> cancelled_timers;
};

class Recorder {
 public:
  virtual ~Recorder() = default;
  // Before the hook: appends the event's record; returns the host the hook's operations go to.
  virtual ReactorHost* begin_event(const Event& event, LiveHost& live) = 0;
  // After the hook (c->supervision says whether it failed).
  virtual void end_event(Cell* c) = 0;
  // Worker thread, between two events: a snapshot of the reactor is about to be taken, anchored
  // by its event count; the log written so far must reach its sink first.
  virtual void before_snapshot(Cell* c) = 0;
  // Worker thread, between two events: the runtime writes the reactor's timers and sockets into
  // its heap for a snapshot (begin), and has written them (end: the log gets the values, so that a
  // replay's heap makes the same allocations; RECORDING_FORMAT.md, "outside_state"). Not for the
  // recording's own anchors, which the log starts after.
  virtual void begin_outside_state(Cell* c) = 0;
  virtual void end_outside_state(Cell* c) = 0;
  // Worker thread, between two events: file mode writes the block held so far, so that a process
  // killed later (SIGKILL) loses none of it. The worker calls it when it has idled for a while
  // (Worker::on_purge), RecordingOptions::flush_interval after the recorder asked for it
  // (Worker::queue_recording_flush), and before the reactor moves to another worker.
  virtual void flush_pending(Cell* c) = 0;
  // Worker thread, between two events (Runtime::dump_recording): file mode flushes and returns
  // its directory; ring mode writes its checkpoint and log into `directory` and returns it.
  virtual std::filesystem::path dump(Cell* c, const std::filesystem::path& directory) = 0;
  // Worker thread, right after a failing event under kRestart: where an exact restart reads the
  // reactor's past, or nullopt with `*why` when the recording cannot give it (it stopped after an
  // error, or lost a record). The recording starts anew, from a new anchor, at the next event.
  virtual std::optional<RestartSource> take_restart_source(Cell* c, std::string* why) = 0;
};

}  // namespace reheap::detail
