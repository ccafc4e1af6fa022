// RuntimeImpl: what Runtime's handle points to: the workers, the cell table, and the counters
// that tell when the runtime is idle.
//
// Idle detection without a shared hot counter: every send increments a counter owned by the
// sending thread (its worker's, or `external_sent` for outside threads), every handled or dropped
// message increments its worker's `consumed` (after the handler, so messages it sent are counted
// first). wait_idle reads all `consumed` counters, then all `sent` ones; equal sums mean nothing
// was in flight at the moment of the first read (consumed(t1) <= sent(t1) <= sent(t2)). Spawns and
// restores count as one message each, consumed when the reactor's start hooks have run.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "messaging/unhandled_report.h"
#include "reactor/cell_table.h"
#include "reheap/runtime.h"
#include "scheduling/worker.h"

namespace reheap::detail {

class RuntimeImpl {
 public:
  RuntimeImpl(Runtime& owner, RuntimeConfig config);
  ~RuntimeImpl();

  Runtime& owner;
  const RuntimeConfig config;
  const NodeIdentity identity;  // the process's, as this runtime's config asked (see runtime.h)
  const std::shared_ptr<TimeSource> time;        // config.time or the system's
  const std::shared_ptr<EntropySource> entropy;  // config.entropy or the system's
  CellTable cells;
  std::vector<std::unique_ptr<Worker>> workers;

  std::atomic<bool> accepting{true};          // outside sends and spawns
  std::atomic<bool> stopping_all{false};      // shutdown's final phase: reactor sends refused
  std::atomic<std::uint64_t> external_sent{0};
  std::atomic<std::uint64_t> external_consumed{0};  // dead letters found when reusing a cell
  std::atomic<std::uint64_t> dead_letters{0};
  std::atomic<std::uint64_t> failures{0};
  std::atomic<std::uint64_t> recording_errors{0};  // RuntimeStats::recording_errors
  std::atomic<std::uint64_t> accept_errors{0};     // RuntimeStats::accept_errors
  std::atomic<std::uint64_t> placement_moves{0};   // RuntimeStats::placement_moves
  std::atomic<std::uint32_t> next_worker{0};
  bool shut_down = false;
  UnhandledReport unhandled;  // RuntimeConfig::on_unhandled

  // Heaps of spawns whose constructor threw while something still lived in them: the exception's
  // own data, such as std::runtime_error's message, is allocated there (the constructor runs with
  // the new heap current). Each is kept with a reference to its exception until the runtime is
  // destroyed, which then releases the exception with the heap current and destroys the heap.
  std::mutex failed_spawns_mutex;
  std::vector<std::pair<HeapPtr, std::exception_ptr>> failed_spawns;

  // Reactors that stopped, for wait_stopped.
  std::mutex stop_mutex;
  std::condition_variable stop_cv;
  std::atomic<int> stop_waiters{0};  // notify only when someone waits: stops can be millions
  void notify_stopped() {
    // A read-modify-write, not a load: if it comes first in stop_waiters' order, a waiter's
    // later registration (also an RMW) reads from it, which makes the cell's release (its id
    // store, sequenced before) visible to the waiter's check. Either way one sees the other.
    // (Not a fence: ThreadSanitizer does not model fences.)
    if (stop_waiters.fetch_add(0, std::memory_order_seq_cst) == 0) return;
    std::lock_guard lock(stop_mutex);
    stop_cv.notify_all();
  }

  // Waits on stop_cv until `done()` or the timeout; registered as a waiter meanwhile.
  template <class Pred>
  bool wait_for_stops(std::chrono::milliseconds timeout, Pred done) {
    stop_waiters.fetch_add(1, std::memory_order_seq_cst);
    bool ok;
    {
      std::unique_lock lock(stop_mutex);
      ok = stop_cv.wait_for(lock, timeout, done);
    }
    stop_waiters.fetch_sub(1, std::memory_order_seq_cst);
    return ok;
  }

  Worker& pick_worker(int requested);
  std::uint64_t in_flight() const noexcept;
  // `w`: the calling thread's worker of this runtime, or null for any other thread.
  void count_sent(Worker* w) noexcept {
    if (w != nullptr) {
      w->count_sent();
    } else {
      external_sent.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // Throws std::logic_error if the calling thread is one of this runtime's workers: `operation`
  // blocks until workers do something, which a worker waiting for it never would.
  void require_outside_workers(const char* operation) const;
  // Throws std::out_of_range unless `requested` is kAnyWorker or one of the workers.
  void require_worker(int requested, const char* operation) const;

  // Runs `f` on the worker of `ref`'s cell, between two of its events, and waits for it. Throws
  // std::runtime_error("no such reactor") if it is gone, std::logic_error on a worker thread.
  void on_reactor_worker(ActorRef ref, const char* operation, const std::function<void(Cell*)>& f);

  void shutdown();
};

SendResult send_system(RuntimeImpl& rt, ActorRef to, SystemMessage what) noexcept;
// A reactor's send: from its cell, under its reference (null `e`: returns encode_result).
SendResult send_envelope(Cell* from, ActorRef to, Envelope* e, SendResult encode_result) noexcept;
// The runtime's own message in a reactor's name (a SnapshotDone in its target's), from any thread;
// refused once the shutdown stops the reactors, like their own sends. Counts in nobody's stats.
SendResult send_as(RuntimeImpl& rt, ActorRef sender, ActorRef to, Envelope* e,
                   SendResult encode_result) noexcept;

// The runtime a cell belongs to, via its worker.
inline RuntimeImpl& runtime_of(Cell* c) noexcept {
  return c->worker.load(std::memory_order_relaxed)->runtime();
}

}  // namespace reheap::detail
