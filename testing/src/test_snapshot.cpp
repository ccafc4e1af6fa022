// TestRuntime: snapshot requests (Reactor::request_snapshot), answered synchronously.
//
// A request is written down while the requester's hook runs and carried out as soon as that hook
// returns, before the next event of any reactor: the target is then between two events (even when
// it is the requester), which is where a worker saves a heap too. The SnapshotDone answer is an
// ordinary message from the target to the requester, queued after whatever the target sent
// before, as on a worker. As there, the timers the target has armed are written into it before
// the save (the time each has left) and cleared after, so that a restored heap holds them; a
// reactor restored here (TestRuntime::restore) gets them back on its first step.
#include <system_error>

#include "checkpoint/reactor_snapshot.h"  // runtime/src: reactor_of
#include "reactor/reactor_access.h"    // runtime/src
#include "reheap/heap_scope.h"
#include "test_runtime_impl.h"

namespace reheap::testing {

using detail::Entry;
using detail::ReactorState;
using reheap::detail::ReactorAccess;

void TestRuntime::Impl::request_snapshot(ActorRef self, SnapshotRequestId id, ActorRef target,
                                         const std::filesystem::path& file, SnapshotKind kind) {
  const HeapScope system(nullptr);
  snapshot_jobs.push_back(detail::SnapshotJob{self, id, target, file, kind});
}

void TestRuntime::Impl::run_snapshot_jobs() {
  if (snapshot_jobs.empty()) [[likely]] return;
  std::vector<detail::SnapshotJob> jobs;
  jobs.swap(snapshot_jobs);
  for (const detail::SnapshotJob& job : jobs) run_snapshot(job);
}

SnapshotInfo TestRuntime::Impl::save(Entry& target, const std::filesystem::path& file, SnapshotKind kind) {
  if (!target.snapshotter) target.snapshotter = std::make_unique<Snapshotter>(*target.heap, WriteTracking::kAuto);
  auto& saved = ReactorAccess::saved_timers(*target.reactor);
  {
    const HeapScope heap(target.heap.get());
    saved.clear();
    for (const detail::Timer& t : timers) {
      if (t.owner != target.ref) continue;
      saved.push_back(ReactorAccess::SavedTimer{t.id, (t.due - clock.elapsed()).count(), t.period.count()});
    }
  }
  auto clear_saved = [&] {
    const HeapScope heap(target.heap.get());
    saved.clear();
  };
  SnapshotInfo info;
  try {
    info = kind == SnapshotKind::kIncremental ? target.snapshotter->save_increment(file)
                                              : target.snapshotter->save(file);
  } catch (...) {
    clear_saved();
    throw;
  }
  clear_saved();
  return info;
}

void TestRuntime::Impl::run_snapshot(const detail::SnapshotJob& job) {
  SnapshotDone done;
  done.request = job.id;
  done.target = job.target;
  done.file = job.file.string();
  Entry* target = find(job.target);
  if (target == nullptr) {
    done.status = static_cast<std::uint8_t>(SnapshotStatus::kNoSuchReactor);
    done.error = "no such reactor";
  } else if (target->reactor == nullptr || target->state == ReactorState::kFailed) {
    done.status = static_cast<std::uint8_t>(SnapshotStatus::kTargetStopped);
    done.error = "the target has stopped";
  } else {
    try {
      done.set_saved(save(*target, job.file, job.kind));
    } catch (...) {
      done.set_failure(std::current_exception());
    }
  }
  SendResult result = SendResult::kOk;
  reheap::detail::Envelope* envelope = reheap::detail::encode(done, &result);
  // An answer nobody can receive is a dead letter, as on a worker.
  if (envelope != nullptr) static_cast<void>(send(job.target, job.requester, envelope));
}

ActorRef TestRuntime::restore(const std::filesystem::path& file, const SpawnOptions& options) {
  detail::ExclusiveUse::Scope use(impl_->use, "TestRuntime::restore");
  const HeapScope system(nullptr);
  HeapPtr heap = reheap::restore(file);
  Reactor* reactor = reheap::detail::reactor_of(*heap, file);
  // Increments requested later build on the file it came from, as after a restore on a worker.
  auto snapshotter = std::make_unique<Snapshotter>(*heap, WriteTracking::kAuto);
  snapshotter->attach(file);
  const ActorRef ref = impl_->admit(std::move(heap), reactor, options, true);
  impl_->find(ref)->snapshotter = std::move(snapshotter);
  return ref;
}

void TestRuntime::Impl::start_restored(Entry& e) {
  std::vector<ReactorAccess::SavedTimer> saved_timers;
  std::vector<SocketId> saved_sockets;
  {
    const HeapScope system(nullptr);  // the copies are the runtime's
    saved_timers = ReactorAccess::saved_timers(*e.reactor);
    saved_sockets = ReactorAccess::saved_sockets(*e.reactor);
  }
  {
    const HeapScope heap(e.heap.get());
    ReactorAccess::saved_timers(*e.reactor).clear();
    ReactorAccess::saved_sockets(*e.reactor).clear();
  }
  for (const ReactorAccess::SavedTimer& t : saved_timers) {
    timers.insert(detail::Timer{clock.elapsed() + std::chrono::nanoseconds(t.due_in_ns), t.id, e.ref,
                                std::chrono::nanoseconds(t.period_ns)});
  }
  for (SocketId socket : saved_sockets) {
    deliver(e, Event{.kind = EventKind::kClosed, .socket = socket,
                     .error = std::make_error_code(std::errc::connection_aborted)},
            ActorRef());
    if (e.state != ReactorState::kLive) return;  // it failed (under kCollect) or stopped
  }
  deliver(e, Event{.kind = EventKind::kRestored}, ActorRef());
}

}  // namespace reheap::testing
