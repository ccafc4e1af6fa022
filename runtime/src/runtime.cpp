// Runtime: starting and stopping workers, spawning, and the blocking requests that run on a
// reactor's worker between two of its events (snapshot, move, stats).
#include "reheap/runtime.h"

#include <future>
#include <stdexcept>
#include <thread>

#include "checkpoint/reactor_snapshot.h"
#include "io/tcp.h"
#include "io/timer_service.h"
#include "messaging/mailbox_command.h"
#include "reactor/reactor_access.h"
#include "recording/make_recorder.h"
#include "runtime_impl.h"
#include "scheduling/worker.h"

namespace reheap {

namespace detail {

namespace {

static_assert(ActorRef::kOriginBits == NodeIdentity::kNodeBits + NodeIdentity::kIncarnationBits &&
                  ActorRef::kIncarnationBits == NodeIdentity::kIncarnationBits,
              "an ActorRef's origin is a NodeIdentity::origin()");

NodeIdentity settle_identity(const RuntimeConfig& config) {
  NodeIdentity::configure(NodeIdentityConfig{config.node, config.state_dir});
  return NodeIdentity::current();
}

}  // namespace

RuntimeImpl::RuntimeImpl(Runtime& runtime, RuntimeConfig cfg)
    : owner(runtime), config(std::move(cfg)), identity(settle_identity(config)),
      time(config.time ? config.time : TimeSource::system()),
      entropy(config.entropy ? config.entropy : EntropySource::system()),
      cells(identity.origin()) {
  int n = config.workers;
  if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
  if (n <= 0) n = 1;
  for (int i = 0; i < n; ++i) workers.push_back(std::make_unique<Worker>(*this, i));
}

RuntimeImpl::~RuntimeImpl() {
  for (auto& [heap, error] : failed_spawns) {
    {
      HeapScope scope(*heap);
      error = nullptr;  // if this was the last reference, the exception frees into its heap
    }
    heap.reset();
  }
}

Worker& RuntimeImpl::pick_worker(int requested) {
  const int n = static_cast<int>(workers.size());
  if (requested == kAnyWorker) {
    return *workers[next_worker.fetch_add(1, std::memory_order_relaxed) % static_cast<unsigned>(n)];
  }
  if (requested < 0 || requested >= n) {
    throw std::out_of_range("reheap: worker " + std::to_string(requested) + " does not exist (" +
                            std::to_string(n) + " workers)");
  }
  return *workers[static_cast<std::size_t>(requested)];
}

std::uint64_t RuntimeImpl::in_flight() const noexcept {
  std::uint64_t consumed = external_consumed.load(std::memory_order_seq_cst);
  for (const auto& w : workers) consumed += w->consumed.load(std::memory_order_seq_cst);
  std::uint64_t sent = external_sent.load(std::memory_order_seq_cst);
  for (const auto& w : workers) sent += w->sent.load(std::memory_order_seq_cst);
  return sent - consumed;
}

void RuntimeImpl::require_worker(int requested, const char* operation) const {
  const int n = static_cast<int>(workers.size());
  if (requested != kAnyWorker && (requested < 0 || requested >= n)) {
    HeapScope system(nullptr);
    throw std::out_of_range(std::string("reheap::Runtime::") + operation + ": no worker " +
                            std::to_string(requested) + " (" + std::to_string(n) + " workers)");
  }
}

void RuntimeImpl::require_outside_workers(const char* operation) const {
  Worker* here = Worker::current();
  if (here != nullptr && &here->runtime() == this) {
    HeapScope system(nullptr);
    throw std::logic_error(std::string("reheap::Runtime::") + operation +
                           " blocks; it cannot be called on a worker thread of the runtime");
  }
}

void RuntimeImpl::on_reactor_worker(ActorRef ref, const char* operation,
                                    const std::function<void(Cell*)>& f) {
  HeapScope system(nullptr);
  require_outside_workers(operation);
  Cell* c = cells.find(ref);
  if (c == nullptr) {
    throw std::runtime_error(std::string("reheap::Runtime::") + operation + ": no reactor " +
                             std::to_string(ref.value()));
  }
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> result = done->get_future();
  // The command follows the cell if it moves before the command runs.
  struct Request {
    RuntimeImpl* rt;
    ActorRef ref;
    const char* operation;
    const std::function<void(Cell*)>* f;
    std::shared_ptr<std::promise<void>> done;
    void run() const {
      Cell* c = rt->cells.find(ref);
      if (c == nullptr) {
        done->set_exception(std::make_exception_ptr(std::runtime_error(
            std::string("reheap::Runtime::") + operation + ": the reactor stopped")));
        return;
      }
      Worker* w = c->worker.load(std::memory_order_acquire);
      if (!w->on_this_thread()) {
        Request next = *this;
        w->post([next] { next.run(); });
        return;
      }
      try {
        (*f)(c);
        done->set_value();
      } catch (...) {
        done->set_exception(std::current_exception());
      }
    }
  };
  Request request{this, ref, operation, &f, done};
  c->worker.load(std::memory_order_acquire)->post([request] { request.run(); });
  result.get();
}

void RuntimeImpl::shutdown() {
  HeapScope system(nullptr);
  if (shut_down) return;
  shut_down = true;
  accepting.store(false);
  // 1. Stop accepting connections.
  for (auto& w : workers) {
    Worker* worker = w.get();
    worker->post([worker] {
      for (Cell* c : worker->cells()) close_listeners(*worker, c);
    });
  }
  // 2. Drain what is in flight (reactors may keep messaging each other: bounded by the timeout).
  owner.wait_idle(config.drain_timeout);
  // 3. Stop every reactor; a reactor that was moving reaches its new worker and is stopped there.
  stopping_all.store(true);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (cells.live() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::vector<std::future<void>> rounds;
    for (auto& w : workers) {
      auto done = std::make_shared<std::promise<void>>();
      rounds.push_back(done->get_future());
      Worker* worker = w.get();
      worker->post([worker, done] {
        const std::vector<Cell*> live = worker->cells();
        for (Cell* c : live) worker->request_stop(c, true);
        done->set_value();
      });
    }
    for (auto& f : rounds) f.get();
    wait_for_stops(std::chrono::milliseconds(10), [this] { return cells.live() == 0; });
  }
  // 4. Stop the loops and join.
  for (auto& w : workers) {
    Worker* worker = w.get();
    worker->post([worker] { uv_stop(worker->loop()); });
  }
  for (auto& w : workers) w->join();
  // 5. Messages that raced with the stops wait in parked cells: free them, counted as consumed
  // (as teardown and cell reuse count theirs), or messages_in_flight would stay above zero.
  cells.for_each([this](Cell* c) {
    while (Envelope* e = c->mailbox.pop()) {
      c->mailbox.uncount(e);
      abandon_if_mailbox_command(*e);  // a blocked caller of snapshot() is told
      free_envelope(e);
      dead_letters.fetch_add(1, std::memory_order_relaxed);
      external_consumed.fetch_add(1, std::memory_order_relaxed);
    }
  });
}

}  // namespace detail

using detail::Cell;
using detail::RuntimeImpl;
using detail::Worker;

Runtime::Runtime(RuntimeConfig config) {
  HeapScope system(nullptr);
  impl_ = std::make_unique<RuntimeImpl>(*this, std::move(config));
  for (auto& w : impl_->workers) w->start();
}

Runtime::~Runtime() {
  shutdown();
  HeapScope system(nullptr);
  impl_.reset();
}

int Runtime::workers() const noexcept { return static_cast<int>(impl_->workers.size()); }

NodeIdentity Runtime::identity() const noexcept { return impl_->identity; }

Runtime* Runtime::current() noexcept {
  Worker* w = Worker::current();
  return w != nullptr ? &w->runtime().owner : nullptr;
}

ActorRef Runtime::spawn_constructed(const SpawnOptions& options, ReactorHost::Construct construct,
                                   void* arguments) {
  HeapPtr heap;
  {
    HeapScope system(nullptr);
    if (!impl_->accepting.load() && Worker::current() == nullptr) {
      throw std::runtime_error("reheap::Runtime::spawn: the runtime is shutting down");
    }
    if (impl_->stopping_all.load()) {
      throw std::runtime_error("reheap::Runtime::spawn: the runtime is shutting down");
    }
    impl_->require_worker(options.worker, "spawn");
    detail::recording::require_recordable(
        detail::recording::resolve(options.recording, impl_->config.recording), "spawn");
    heap = Heap::create(HeapConfig{options.heap_limit});
  }
  Reactor* reactor = nullptr;
  try {
    HeapScope scope(heap.get());
    reactor = construct(arguments);
  } catch (...) {
    abandon_spawn(std::move(heap), std::current_exception());
    throw;
  }
  detail::require_reactor_in_heap(heap, reactor, "reheap::Runtime::spawn");
  return finish_spawn(std::move(heap), options, reactor);
}

void Runtime::abandon_spawn(HeapPtr heap, std::exception_ptr error) noexcept {
  HeapScope system(nullptr);
  // The unwinding freed the reactor and its members; what is still alive in the heap belongs to
  // the exception on its way to the caller (or leaked from the constructor). Destroying the heap
  // now would leave that exception dangling, so such a heap is kept (see failed_spawns).
  if (heap->stats().live_bytes == 0) return;  // the heap goes now
  try {
    std::lock_guard lock(impl_->failed_spawns_mutex);
    impl_->failed_spawns.emplace_back(std::move(heap), std::move(error));
  } catch (...) {
    // Out of memory for the list: keep the heap alive regardless (a leak, never a dangling
    // exception).
    static_cast<void>(heap.release());
  }
}

namespace {

// Fills a fresh cell and hands it to its worker (which runs the start hooks first).
ActorRef publish(RuntimeImpl& rt, Cell* c, HeapPtr heap, Reactor* reactor,
                 const SpawnOptions& options, ActorRef ref, bool restored) {
  Worker& w = rt.pick_worker(options.worker);
  c->heap = std::move(heap);
  c->reactor = reactor;
  c->options = options;
  c->state = detail::CellState::kLive;
  c->started = false;
  c->restored = restored;
  c->supervision.failed = false;
  c->graceful_stop = true;
  c->move_to = nullptr;
  c->arriving = false;
  c->stats = ReactorStats{};
  // An explicit worker pins the reactor there (spawn_options.h).
  c->placement.reset(options.worker != kAnyWorker);
  c->mailbox.reset_high_water();
  c->capacity.store(options.mailbox.capacity, std::memory_order_relaxed);
  c->reject_when_full.store(options.mailbox.overflow == OverflowPolicy::kReject,
                            std::memory_order_relaxed);
  c->rejected.store(0, std::memory_order_relaxed);
  // Release: a worker that finds itself here (Worker::catch_up, for a cell it fed and whose
  // occupant may have been replaced since) then sees the fields above, state and started first.
  c->worker.store(&w, std::memory_order_release);
  // Anchored on the worker, at the reactor's first event (recording/recorder.cpp).
  const RecordingOptions& recording = detail::recording::resolve(options.recording, rt.config.recording);
  c->recorder.reset();
  if (recording.mode == RecordingMode::kFile || recording.mode == RecordingMode::kRing) {
    c->recorder = detail::recording::make_recorder(recording, rt.recording_errors);
  }
  Worker* here = Worker::current();
  rt.count_sent(here != nullptr && &here->runtime() == &rt ? here : nullptr);  // the start
  c->id.store(ref.value(), std::memory_order_release);
  // The cell is still "scheduled" from its parked state: the queue is ours to push it on.
  w.schedule(c);
  return ref;
}

}  // namespace

ActorRef Runtime::finish_spawn(HeapPtr heap, const SpawnOptions& options, Reactor* reactor) {
  HeapScope system(nullptr);
  std::uint64_t dead = 0;
  Cell* c = impl_->cells.acquire(&dead);  // throws when full: the heap goes
  impl_->external_consumed.fetch_add(dead, std::memory_order_relaxed);
  impl_->dead_letters.fetch_add(dead, std::memory_order_relaxed);
  const ActorRef ref = ActorRef::make(impl_->cells.origin(), c->slot, c->generation);
  detail::ReactorAccess::self(*reactor) = ref;
  heap->set_root(reactor);
  return publish(*impl_, c, std::move(heap), reactor, options, ref, false);
}

bool Runtime::stop(ActorRef ref) {
  return detail::send_system(*impl_, ref, detail::SystemMessage::kStop) == SendResult::kOk;
}

bool Runtime::alive(ActorRef ref) const noexcept { return impl_->cells.find(ref) != nullptr; }

bool Runtime::wait_stopped(ActorRef ref, std::chrono::milliseconds timeout) {
  impl_->require_outside_workers("wait_stopped");  // a reactor stops on a worker
  return impl_->wait_for_stops(timeout, [&] { return !alive(ref); });
}

bool Runtime::wait_idle(std::chrono::milliseconds timeout) {
  // On a worker, the message being handled is itself in flight: the wait could never succeed.
  impl_->require_outside_workers("wait_idle");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (impl_->in_flight() == 0) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

SnapshotInfo Runtime::snapshot(ActorRef ref, const std::filesystem::path& file) {
  SnapshotInfo info;
  detail::run_in_mailbox_order(*impl_, ref, "snapshot",
                               [&](Cell* c) { info = detail::save_reactor(c, file, false); });
  return info;
}

SnapshotInfo Runtime::snapshot_increment(ActorRef ref, const std::filesystem::path& file) {
  SnapshotInfo info;
  detail::run_in_mailbox_order(*impl_, ref, "snapshot_increment",
                               [&](Cell* c) { info = detail::save_reactor(c, file, true); });
  return info;
}

ActorRef Runtime::restore(const std::filesystem::path& file, const ReactorRestoreOptions& options) {
  HeapScope system(nullptr);
  if (!impl_->accepting.load()) {
    throw std::runtime_error("reheap::Runtime::restore: the runtime is shutting down");
  }
  // Before the heap and its slot are taken: a refusal then leaves nothing behind.
  impl_->require_worker(options.worker != kAnyWorker ? options.worker : options.spawn.worker,
                        "restore");
  detail::recording::require_recordable(
      detail::recording::resolve(options.spawn.recording, impl_->config.recording), "restore");
  RestoreOptions heap_options;
  heap_options.layout = options.layout;
  HeapPtr heap;
  try {
    heap = reheap::restore(file, heap_options);
  } catch (const SnapshotError& e) {
    if (e.code() != SnapshotErrc::kRangeInUse) throw;
    // The usual cause here: the snapshot's own reactor still runs, in the addresses it needs.
    throw SnapshotError(e.code(), std::string(e.what()) +
                                      "; reheap::Runtime::restore: if that heap is a reactor of this runtime "
                                      "(the snapshot's own reactor, still running, or a spawn that took its "
                                      "addresses), stop it (Runtime::stop, then wait_stopped) before restoring");
  }
  Reactor* reactor = detail::reactor_of(*heap, file);
  const ActorRef ref = detail::ReactorAccess::self(*reactor);
  std::uint64_t dead = 0;
  // The reactor keeps its reference, in its own slot or relocated (cell.h).
  Cell* c = impl_->cells.acquire_for(ref, &dead);
  if (c == nullptr) {
    throw std::runtime_error("reheap::Runtime::restore: " + file.string() + ": reactor " +
                             std::to_string(ref.value()) +
                             " is alive in this runtime (the snapshot's own reactor, restored already or "
                             "never stopped)");
  }
  impl_->external_consumed.fetch_add(dead, std::memory_order_relaxed);
  impl_->dead_letters.fetch_add(dead, std::memory_order_relaxed);
  SpawnOptions spawn = options.spawn;
  if (options.worker != kAnyWorker) spawn.worker = options.worker;
  try {
    c->snap.snapshotter = std::make_unique<Snapshotter>(*heap, WriteTracking::kAuto);
    c->snap.tracks = true;
    c->snap.snapshotter->attach(file);
    c->snap.last_snapshot = std::filesystem::absolute(file);
  } catch (...) {
    c->snap.snapshotter.reset();
    c->snap.last_snapshot.clear();
    impl_->cells.release(c);
    throw;
  }
  return publish(*impl_, c, std::move(heap), reactor, spawn, ref, true);
}

std::filesystem::path Runtime::dump_recording(ActorRef ref, const std::filesystem::path& directory) {
  std::filesystem::path written;
  detail::run_in_mailbox_order(*impl_, ref, "dump_recording", [&](Cell* c) {
    if (!c->recorder) {
      throw std::runtime_error("reheap::Runtime::dump_recording: reactor " + std::to_string(ref.value()) +
                               " is not recorded");
    }
    written = c->recorder->dump(c, directory);
  });
  return written;
}

void Runtime::move(ActorRef ref, int worker) {
  if (worker == kAnyWorker) {
    throw std::out_of_range("reheap::Runtime::move: kAnyWorker (-1) names no worker; give the worker to move to");
  }
  Worker& to = impl_->pick_worker(worker);
  impl_->on_reactor_worker(ref, "move", [&to](Cell* c) {
    c->placement.pin();  // the user chose its worker: the placement policy leaves it there
    Worker* here = c->worker.load(std::memory_order_relaxed);
    if (here == &to && c->move_to == nullptr) return;
    c->move_to = &to;
    if (c->scheduled.exchange(1, std::memory_order_seq_cst) == 0) here->schedule(c);
  });
}

ReactorStats Runtime::stats(ActorRef ref) {
  ReactorStats s;
  impl_->on_reactor_worker(ref, "stats", [&s](Cell* c) {
    s = c->stats;
    s.worker = c->worker.load(std::memory_order_relaxed)->index();
    const std::uint32_t length = c->mailbox.waiting();
    s.queue_length = length;
    s.queue_high_water = std::max(c->mailbox.high_water(), length);
    s.rejected = c->rejected.load(std::memory_order_relaxed);
    if (c->heap) {
      const HeapStats h = c->heap->stats();
      s.heap_committed_bytes = h.committed_bytes;
      s.heap_live_bytes = h.live_bytes;
    }
  });
  return s;
}

RuntimeStats Runtime::stats() const noexcept {
  RuntimeStats s;
  s.reactors = impl_->cells.live();
  s.messages_in_flight = impl_->in_flight();
  s.dead_letters = impl_->dead_letters.load(std::memory_order_relaxed);
  s.failures = impl_->failures.load(std::memory_order_relaxed);
  s.recording_errors = impl_->recording_errors.load(std::memory_order_relaxed);
  s.accept_errors = impl_->accept_errors.load(std::memory_order_relaxed);
  s.placement_moves = impl_->placement_moves.load(std::memory_order_relaxed);
  for (const auto& w : impl_->workers) {
    s.wakeups += w->wakeups.load(std::memory_order_relaxed);
    s.idle_purges += w->idle_purges.load(std::memory_order_relaxed);
  }
  return s;
}

void Runtime::shutdown() {
  if (!impl_) return;
  // Shutdown joins the workers, so it cannot run on one (from ~Runtime on a worker, this ends the
  // program, which is better than a deadlock).
  impl_->require_outside_workers("shutdown");
  impl_->shutdown();
}

}  // namespace reheap
