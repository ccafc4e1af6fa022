// Runtime::checkpoint_process (process_checkpoint.h): the barrier, what each worker prepares at
// it, the engine's dump, and the resume.
//
// The barrier is one command posted to every worker: a command runs between two turns, so a
// worker running it runs no handler. Each parks its cells' timers and, under the close policy,
// aborts their connections, then waits until the calling thread releases it; the calling thread
// suspends write tracking, has the engine dump, reopens tracking and releases. Everything a
// worker touches it touches on its own thread; the barrier's mutex orders it against the dump.
#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <vector>

#include "reheap/process_checkpoint.h"
#include "../runtime_impl.h"
#include "io/tcp.h"
#include "io/timer_service.h"
#include "reheap/runtime.h"
#include "reheap/write_tracking.h"

namespace reheap {
namespace {

using Clock = std::chrono::steady_clock;

struct Barrier {
  std::mutex mutex;
  std::condition_variable cv;
  int parked = 0;
  int resumed = 0;
  bool released = false;
  bool aborted = false;  // gave up waiting: workers arriving later do nothing
  std::size_t connections_closed = 0;
  Clock::time_point first_parked{};
};

// On worker `w`'s thread, as a command.
void park_worker(detail::Worker& w, Barrier& b, bool close_connections) {
  {
    const std::lock_guard lock(b.mutex);
    if (b.aborted) return;
  }
  std::vector<detail::Cell*> parked;
  std::size_t closed = 0;
  const std::error_code aborted = std::make_error_code(std::errc::connection_aborted);
  for (detail::Cell* c : w.cells()) {
    if (c->arriving) continue;  // moved here, timers parked already: its first turn re-arms them
    detail::park_timers(w, c);
    parked.push_back(c);
    if (close_connections) closed += detail::abort_connections(c, aborted);
  }
  {
    std::unique_lock lock(b.mutex);
    if (b.parked == 0) b.first_parked = Clock::now();
    ++b.parked;
    b.connections_closed += closed;
    b.cv.notify_all();
    b.cv.wait(lock, [&] { return b.released; });
  }
  // A restored process's monotonic clock is another one: every timer keeps the delay it had left.
  uv_update_time(w.loop());
  for (detail::Cell* c : parked) detail::rearm_timers(w, c, detail::ParkedTime::kStoodStill);
  const std::lock_guard lock(b.mutex);
  ++b.resumed;
  b.cv.notify_all();
}

bool keep_established(const CheckpointEngine& engine, const CheckpointSupport& support, TcpCheckpointPolicy policy) {
  switch (policy) {
    case TcpCheckpointPolicy::kAuto:
      return support.tcp_repair;
    case TcpCheckpointPolicy::kKeepEstablished:
      if (!support.tcp_repair) {
        throw CheckpointError("checkpoint_process: " + engine.name() +
                              " cannot dump established TCP connections here (TCP_REPAIR needs CAP_NET_ADMIN); "
                              "use TcpCheckpointPolicy::kAuto or kCloseConnections");
      }
      return true;
    case TcpCheckpointPolicy::kCloseConnections:
      return false;
  }
  return false;
}

// One checkpoint at a time in the process: a dump is of the whole process.
std::mutex g_one_checkpoint;

}  // namespace

CheckpointResult Runtime::checkpoint_process(const std::filesystem::path& directory, const CheckpointOptions& options) {
  impl_->require_outside_workers("checkpoint_process");
  const std::shared_ptr<CheckpointEngine> engine = options.engine ? options.engine : criu_engine();
  const CheckpointSupport support = engine->support();
  if (!support.available) throw CheckpointError(support.reason);
  const bool keep = keep_established(*engine, support, options.tcp);
  const std::lock_guard serial(g_one_checkpoint);
  if (!impl_->accepting.load()) throw CheckpointError("checkpoint_process: the runtime is shutting down");

  CheckpointResult result;
  result.kept_established_tcp = keep;
  const auto barrier = std::make_shared<Barrier>();
  const int workers = static_cast<int>(impl_->workers.size());
  const Clock::time_point start = Clock::now();
  for (auto& w : impl_->workers) {
    detail::Worker* worker = w.get();
    worker->post([barrier, worker, keep] { park_worker(*worker, *barrier, !keep); });
  }
  {
    std::unique_lock lock(barrier->mutex);
    if (!barrier->cv.wait_for(lock, options.barrier_timeout, [&] { return barrier->parked == workers; })) {
      barrier->aborted = true;
      barrier->released = true;
      const int parked = barrier->parked;
      barrier->cv.notify_all();
      barrier->cv.wait(lock, [&] { return barrier->resumed == parked; });
      throw CheckpointError("checkpoint_process: " + std::to_string(workers - parked) + " of " +
                            std::to_string(workers) + " workers did not reach the barrier within " +
                            std::to_string(options.barrier_timeout.count()) +
                            " ms (a handler running that long?); nothing was dumped" +
                            (barrier->connections_closed > 0 ? ", but connections were closed" : ""));
    }
  }
  result.barrier = Clock::now() - start;

  const WriteTrackingCensus suspended = suspend_write_tracking();
  result.tracked_heaps = suspended.trackers;
  std::exception_ptr failure;
  const Clock::time_point dump_start = Clock::now();
  try {
    result.outcome = engine->dump(DumpRequest{directory, keep, options.leave_running, workers});
  } catch (...) {
    failure = std::current_exception();
  }
  result.dump = Clock::now() - dump_start;
  result.tracking_error = resume_write_tracking().error;
  {
    const std::lock_guard lock(barrier->mutex);
    result.connections_closed = barrier->connections_closed;
  }
  if (failure == nullptr && result.outcome == DumpOutcome::kRestored && options.on_restored) {
    try {
      options.on_restored(result);
    } catch (...) {
      failure = std::current_exception();
    }
  }
  {
    std::unique_lock lock(barrier->mutex);
    barrier->released = true;
    barrier->cv.notify_all();
    barrier->cv.wait(lock, [&] { return barrier->resumed == workers; });
    result.pause = Clock::now() - barrier->first_parked;
  }
  if (failure != nullptr) std::rethrow_exception(failure);
  return result;
}

}  // namespace reheap
