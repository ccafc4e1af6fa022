// Snapshots of live reactors (see reactor_snapshot.h).
#include "checkpoint/reactor_snapshot.h"

#include <cstddef>
#include <cstring>
#include <system_error>

#include "io/tcp.h"
#include "io/timer_service.h"
#include "reactor/reactor_access.h"
#include "reactor/reactor_scope.h"
#include "recording/recorder.h"
#include "reheap/byte_stream.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot_file.h"
#include "scheduling/worker.h"

namespace reheap::detail {
namespace {

// Writes the runtime-side state into the reactor's heap. `logged`: a recorded reactor's log says
// so (for every snapshot but the recording's own anchor, which its log starts after).
void record_outside_state(Cell* c, bool logged = true) {
  Recorder* recorder = logged ? c->recorder.get() : nullptr;
  if (recorder != nullptr) recorder->begin_outside_state(c);
  {
    ReactorScope scope(c);
    record_timers(c);
    record_sockets(c);
  }
  if (recorder != nullptr) recorder->end_outside_state(c);
}

void clear_outside_state(Cell* c) {
  ReactorScope scope(c);
  ReactorAccess::saved_timers(*c->reactor).clear();
  ReactorAccess::saved_sockets(*c->reactor).clear();
}

}  // namespace

SnapshotInfo save_reactor(Cell* c, const std::filesystem::path& file, bool increment) {
  HeapScope system(nullptr);
  // The snapshot is anchored by the heap's event count: the log must hold every event before it.
  if (c->recorder) c->recorder->before_snapshot(c);
  if (!c->snap.snapshotter || !c->snap.tracks) {
    c->snap.snapshotter.reset();  // a checkpoint-only Snapshotter (no tracking) makes way
    c->snap.snapshotter = std::make_unique<Snapshotter>(*c->heap, WriteTracking::kAuto);
    c->snap.tracks = true;
  }
  record_outside_state(c);
  SnapshotInfo info;
  try {
    info = increment ? c->snap.snapshotter->save_increment(file) : c->snap.snapshotter->save(file);
  } catch (...) {
    clear_outside_state(c);
    throw;
  }
  clear_outside_state(c);
  c->snap.last_snapshot = std::filesystem::absolute(file);
  c->snap.checkpoint.clear();
  c->snap.checkpoint.shrink_to_fit();
  return info;
}

void take_checkpoint(Cell* c) {
  HeapScope system(nullptr);
  if (!c->snap.snapshotter) {
    c->snap.snapshotter = std::make_unique<Snapshotter>(*c->heap, WriteTracking::kOff);
    c->snap.tracks = false;
  }
  record_outside_state(c);
  c->snap.checkpoint.clear();
  VectorSink sink(c->snap.checkpoint);
  c->snap.snapshotter->write(sink);
  clear_outside_state(c);
}

namespace {

Snapshotter& snapshotter_of(Cell* c) {
  if (!c->snap.snapshotter) {
    c->snap.snapshotter = std::make_unique<Snapshotter>(*c->heap, WriteTracking::kOff);
    c->snap.tracks = false;
  }
  return *c->snap.snapshotter;
}

}  // namespace

void write_reactor_aside(Cell* c, ByteSink& sink) {
  HeapScope system(nullptr);
  Snapshotter& s = snapshotter_of(c);
  record_outside_state(c, false);
  try {
    s.write(sink);
  } catch (...) {
    clear_outside_state(c);
    throw;
  }
  clear_outside_state(c);
}

void save_reactor_aside(Cell* c, const std::filesystem::path& file) {
  HeapScope system(nullptr);
  Snapshotter& s = snapshotter_of(c);
  record_outside_state(c, false);
  try {
    s.save(file);
  } catch (...) {
    clear_outside_state(c);
    throw;
  }
  clear_outside_state(c);
}

Reactor* reactor_of(Heap& heap, const std::filesystem::path& file) {
  void* root = heap.root();
  if (root == nullptr || !heap.owns(root)) {
    throw SnapshotError(SnapshotErrc::kCorrupt, file.string() + ": the heap's root is not a reactor (not a Runtime::snapshot file?)");
  }
  auto* r = static_cast<Reactor*>(root);
  if (ReactorAccess::magic(*r) != kReactorMagic) {
    throw SnapshotError(SnapshotErrc::kCorrupt, file.string() + ": the heap's root is not a reactor (not a Runtime::snapshot file?)");
  }
  return r;
}

// Reactor is polymorphic, so not standard-layout, where offsetof is only conditionally
// supported; GCC and Clang give the offsets of a class without virtual bases, which it has none of.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
ReactorAccess::Offsets ReactorAccess::offsets() noexcept {
  const std::size_t book = offsetof(Reactor, state_);
  return Offsets{book + offsetof(ReactorBookkeeping, magic), offsetof(Reactor, self_),
                 book + offsetof(ReactorBookkeeping, events), book + offsetof(ReactorBookkeeping, recording_id)};
}
#pragma GCC diagnostic pop

SavedReactor read_saved_reactor(const std::filesystem::path& file) {
  const SnapshotHeader header = read_snapshot_header(file);
  const auto not_a_reactor = [&] {
    return SnapshotError(SnapshotErrc::kCorrupt,
                         file.string() + ": the heap's root is not a reactor (not a Runtime::snapshot file?)");
  };
  if (header.root == 0) throw not_a_reactor();
  const ReactorAccess::Offsets at = ReactorAccess::offsets();
  unsigned char bytes[sizeof(Reactor)];
  read_snapshot_bytes(file, header.root, bytes, sizeof bytes);
  const auto field = [&]<class T>(std::size_t offset, T* out) { std::memcpy(out, bytes + offset, sizeof(T)); };
  std::uint64_t magic = 0;
  field(at.magic, &magic);
  if (magic != kReactorMagic) throw not_a_reactor();
  SavedReactor saved;
  field(at.self, &saved.self);
  field(at.events, &saved.events);
  field(at.recording_id, &saved.recording_id);
  return saved;
}

void restore_in_place(Cell* c) {
  HeapScope system(nullptr);
  const ActorRef ref = c->ref();
  Worker& w = *c->worker.load(std::memory_order_relaxed);
  close_timers(w, c);
  close_sockets(w, c);
  // The failed reactor's state is suspect: no destructor runs; its heap goes whole. Its chunks
  // pass straight to the restored heap (restore_replacing), so that a spawn on another thread
  // cannot take them in between.
  c->reactor = nullptr;
  c->snap.snapshotter.reset();
  HeapPtr failed = std::move(c->heap);
  HeapPtr heap;
  std::filesystem::path from = c->snap.last_snapshot;
  if (!from.empty()) {
    heap = restore_replacing(std::move(failed), from);
  } else if (!c->snap.checkpoint.empty()) {
    MemorySource source(c->snap.checkpoint.data(), c->snap.checkpoint.size());
    from = "<checkpoint in memory>";
    heap = restore_replacing(std::move(failed), source);
  } else {
    failed.reset();
    throw SnapshotError(SnapshotErrc::kMisuse,
                        "no snapshot to restart from (on_start failed before the checkpoint)");
  }
  Reactor* r = reactor_of(*heap, from);
  if (ReactorAccess::self(*r) != ref) {
    throw SnapshotError(SnapshotErrc::kCorrupt,
                        from.string() + ": the snapshot holds another reactor than the one restarting");
  }
  c->heap = std::move(heap);
  c->reactor = r;
  if (!c->snap.last_snapshot.empty()) {
    c->snap.snapshotter = std::make_unique<Snapshotter>(*c->heap, WriteTracking::kAuto);
    c->snap.tracks = true;
    c->snap.snapshotter->attach(c->snap.last_snapshot);
  }
  c->restored = true;
  c->started = false;
}

void start_restored(Worker& w, Cell* c) {
  restart_recorded_timers(w, c);
  std::vector<SocketId> sockets;
  {
    HeapScope system(nullptr);
    sockets = ReactorAccess::saved_sockets(*c->reactor);
  }
  clear_outside_state(c);
  for (SocketId id : sockets) {
    w.deliver(c, Event{.kind = EventKind::kClosed,
                       .socket = id,
                       .error = std::make_error_code(std::errc::connection_aborted)});
  }
  w.deliver(c, Event{.kind = EventKind::kRestored});
}

}  // namespace reheap::detail
