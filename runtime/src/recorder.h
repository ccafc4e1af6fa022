// Recorder: the recording of one reactor (see reheap/recording.h). The event funnel calls it
// around every event of a recorded reactor; the host it returns wraps the runtime's and writes
// down every answer (and, optionally, a digest of every output) after the event's record.
#pragma once

#include <filesystem>

#include "reheap/event.h"
#include "reheap/reactor_host.h"

namespace reheap::detail {

struct Cell;
class LiveHost;

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
  // Worker thread, between two events, the worker idle for a while (Worker::on_purge): file mode
  // writes the block held so far, so that a process that dies later, by another reactor's fatal
  // signal or a SIGKILL, loses none of what was recorded before the pause.
  virtual void flush_when_idle(Cell* c) = 0;
  // Worker thread, between two events (Runtime::dump_recording): file mode flushes and returns
  // its directory; ring mode writes its checkpoint and log into `directory` and returns it.
  virtual std::filesystem::path dump(Cell* c, const std::filesystem::path& directory) = 0;
};

}  // namespace reheap::detail
