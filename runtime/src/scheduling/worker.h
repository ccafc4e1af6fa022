// Worker: one thread running one libuv loop, and the reactors pinned to it. worker.cpp owns the
// loop, its queues and wake-ups; cell_turn.cpp owns a cell's turn (its messages, start and stop,
// supervision after each event); every event goes through the funnel (event_funnel.h).
//
// A turn of the loop, in libuv's phase order:
//   timers      on_timer hooks of its reactors (timer_service.cpp)
//   idle        active only while work is queued, so that poll does not block
//   prepare     nothing queued: publish `sleeping` (then re-check the run queue, see below)
//   poll        socket events (tcp.cpp) and the wake-up eventfd
//   check       the turn proper: run posted commands, move the run queue to the ready list, run
//               every ready cell once (a batch of messages each)
// Cells made ready during a turn run in further passes of the same turn until kLocalRuns cells
// have run; the rest wait for the next turn, after the loop has polled I/O once more, so a
// reactor sending itself messages cannot starve sockets and timers.
//
// Catching up: a run that fed one reactor on this worker a batch or more (outbox.h counts what
// each run pushes) is followed at once by a run of that consumer, for up to its whole backlog
// (kCatchUpLimit at most), out of queue order; its place in the queue stays, and runs it again
// later. FIFO order among the queued alone would let a fan-in's senders on this worker each send
// everything before the consumer handled any of it: every message in flight at once, all of it
// on freshly faulted pages. Per-sender order is the mailbox's and is not affected.
//
// Wake-ups: other threads push onto `run_queue_` / `commands_` (lock-free stacks) and write the
// eventfd only if the worker published `sleeping`. The worker stores `sleeping` = true and then
// re-reads both stacks; senders push and then read `sleeping`; all seq_cst, so at least one side
// sees the other and no push is left unnoticed.
#pragma once

#include <uv.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>

#include "messaging/outbox.h"
#include "reactor/cell.h"
#include "reactor/event_funnel.h"
#include "reactor/reactor_scope.h"
#include "scheduling/intrusive_stack.h"
#include "supervision/restart.h"

namespace reheap::detail {

class RuntimeImpl;
class Worker;

// The worker of the calling thread, or null. Read by every send (Worker::current): inline, and
// initial-exec for the reason given at t_host_slot (host_slot.h).
extern constinit thread_local Worker* t_worker [[gnu::tls_model("initial-exec")]];

// Adds the time from construction to destruction to the cell's handler time: one clock read
// pair per turn of a reactor, not per message.
class HandlerClock {
 public:
  explicit HandlerClock(Cell* c) noexcept : cell_(c), start_(std::chrono::steady_clock::now()) {}
  ~HandlerClock() {
    const auto dt = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                   std::chrono::steady_clock::now() - start_)
                                                   .count());
    cell_->stats.handler_ns += dt;
    if (dt > cell_->stats.max_handler_ns) cell_->stats.max_handler_ns = dt;
  }
  HandlerClock(const HandlerClock&) = delete;
  HandlerClock& operator=(const HandlerClock&) = delete;

 private:
  Cell* cell_;
  std::chrono::steady_clock::time_point start_;
};

class Worker {
  struct Command {
    Command* next;
    std::function<void()> run;
  };

 public:
  Worker(RuntimeImpl& runtime, int index);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void start();
  void join();

  int index() const noexcept { return index_; }
  RuntimeImpl& runtime() const noexcept { return runtime_; }
  uv_loop_t* loop() noexcept { return &loop_; }
  bool on_this_thread() const noexcept { return t_worker == this; }
  static Worker* current() noexcept { return t_worker; }  // the calling thread's, or null

  // Puts a cell whose `scheduled` flag the caller just flipped to 1 on this worker's queue.
  // Any thread.
  void schedule(Cell* c) noexcept {
    if (current() == this) {
      push_ready(c);
    } else {
      push_remote(c);
    }
  }

  // Runs `command` on this worker between two turns. Any thread. The closure is built in
  // process memory even when called from a reactor's hook (its heap current).
  template <class F>
  void post(F&& command) {
    Command* cmd;
    {
      HeapScope system(nullptr);
      cmd = new Command{nullptr, std::function<void()>(std::forward<F>(command))};
    }
    push_command(cmd);
  }

  // Worker thread: delivers one event through the funnel (event_funnel.h), then pushes what its
  // hook sent (outbox.h). False if the cell failed or is stopping; the caller runs after_hook.
  bool deliver(Cell* c, const Event& event) {
    const bool outer = in_event_;
    in_event_ = true;
    const bool live = funnel_.deliver(c, event);
    funnel_.leave();
    in_event_ = outer;
    outbox_.flush();
    return live;
  }

  // Worker thread: the sends of the running event, held until it ends (outbox.h), and whether
  // an event is running (sends made outside one, by the runtime itself, are pushed at once).
  Outbox& outbox() noexcept { return outbox_; }
  bool in_event() const noexcept { return in_event_; }

  // Worker thread: one event from the loop (a timer, a socket): delivered, timed, then after_hook.
  // A reactor restarting exactly (restart.h) gets it once the restart is done.
  void deliver_event(Cell* c, const Event& event) {
    if (c->restart != nullptr) [[unlikely]] {
      defer_during_restart(c, event);
      return;
    }
    const HandlerClock clock(c);
    deliver(c, event);
    after_hook(c);
  }

  // Worker thread, after every event: handles c->supervision.failed and schedules a stopping
  // cell for its teardown.
  void after_hook(Cell* c);

  // Worker thread: the reactor stops after the current hook (on_stop first if `graceful`).
  void request_stop(Cell* c, bool graceful);

  // Worker thread: calls c's recorder's flush_pending within `within` (recorder.h), unless c has
  // left this worker or stopped by then.
  void queue_recording_flush(Cell* c, std::chrono::milliseconds within);

  // Counters the runtime sums for wait_idle (see runtime_impl.h). Only this worker's thread
  // writes them, so a relaxed load and store replace a locked read-modify-write.
  std::atomic<std::uint64_t> sent{0};
  std::atomic<std::uint64_t> consumed{0};
  void count_sent() noexcept {
    sent.store(sent.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  // Release: whoever sees this count also sees the sends the handler made before it.
  void count_consumed() noexcept {
    consumed.store(consumed.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  // A stop or a failure of c is under way: in flight until settled(c), so that wait_idle does not
  // return between the event that consumed the last message and the reactor's end. Counted
  // before that message is, so that a wait_idle that sees it consumed sees this too.
  void count_settling(Cell* c) noexcept {
    if (c->settling) return;
    c->settling = true;
    count_sent();
  }
  void settled(Cell* c) noexcept {
    if (!c->settling) return;
    c->settling = false;
    count_consumed();
  }
  std::atomic<std::uint64_t> wakeups{0};
  std::atomic<std::uint64_t> idle_purges{0};  // on_purge runs (RuntimeStats::idle_purges)
  // The reactors living here (cells().size()), read by other workers' placement (placement.h).
  std::atomic<std::uint32_t> population{0};

  // Cell runs per turn, in passes, before the loop polls I/O again (see turn()).
  static constexpr std::uint32_t kLocalRuns = 256;
  // Messages a consumer handles at most when it catches up with a producer (see turn()): about
  // 5-10 ms of small messages here, so a backlog of millions is worked off in several turns and
  // the loop still polls I/O between them. Measured on fanin (10M messages): 2^20 gave ~35M
  // msgs/s and 20-60 ms without a poll; 2^18 ~30M; 2^16 ~27M. The I/O latency bound won.
  static constexpr std::uint32_t kCatchUpLimit = 1u << 18;

  char* read_buffer() noexcept { return read_buffer_; }
  static constexpr std::size_t kReadBufferSize = 64 * 1024;

  // Cells live on this worker, for shutdown (worker-owned).
  std::vector<Cell*>& cells() noexcept { return cells_; }
  void adopt(Cell* c);   // worker thread: c now runs here
  void disown(Cell* c);  // worker thread: c left (moved or stopped)

 private:
  void thread_main();
  void pin();  // RuntimeConfig::pin_workers
  void push_command(Command* cmd) noexcept;
  void push_ready(Cell* c) noexcept;
  void push_remote(Cell* c) noexcept;
  [[gnu::noinline]] void wake() noexcept;
  void turn();
  void run_cell(Cell* c);
  void catch_up(Cell* c);
  // Up to `budget` of c's envelopes, each a message delivered through the funnel or a slow-path
  // envelope admit() handles (cell_turn.cpp): the one loop every message of a turn goes through.
  void run_messages(Cell* c, std::uint32_t budget);
  // The slow path of run_messages, outside the reactor: a bounded mailbox's count and its
  // drop-oldest shedding, dead letters, system messages (stop, snapshot, command). True if `e` is
  // a message the reactor must now be given; false if it was handled here.
  bool admit(Cell* c, Envelope* e);
  void run_start_hooks(Cell* c);
  void teardown(Cell* c);
  void run_commands();
  bool work_queued() const noexcept;
  bool move_out(Cell* c);  // false: held back by a socket (tcp_move.cpp)

  static void on_wake(uv_poll_t* handle, int status, int events);
  static void on_idle(uv_idle_t* handle);
  static void on_prepare(uv_prepare_t* handle);
  static void on_check(uv_check_t* handle);
  static void on_purge(uv_timer_t* handle);
  static void on_recording_flush(uv_timer_t* handle);

  RuntimeImpl& runtime_;
  const int index_;
  std::thread thread_;
  uv_loop_t loop_{};
  int wake_fd_ = -1;
  uv_poll_t wake_poll_{};
  uv_idle_t idle_{};
  uv_prepare_t prepare_{};
  uv_check_t check_{};
  // Purges once the worker has slept idle_purge_delay() (idle_purge.h) after running reactors
  // (on_purge): restarted each time it goes to sleep after a turn that ran one (ran_cells_), and
  // left alone by a wake-up that ran none (a monitor's Runtime::stats, a command), which would
  // otherwise keep it from firing and, once it had, make it fire again for nothing.
  uv_timer_t purge_timer_{};
  bool ran_cells_ = false;  // since purge_timer_ was last started
  // Recorded reactors whose logs wait to be written (queue_recording_flush), by reference, for
  // the timer to skip a cell that moved or was reused meanwhile.
  struct QueuedFlush {
    Cell* cell;
    std::uint64_t ref;
  };
  std::vector<QueuedFlush> queued_flushes_;
  uv_timer_t flush_timer_{};
  std::uint64_t flush_due_ms_ = 0;  // loop time the flush timer fires at; 0: not armed
  bool idle_active_ = false;
  bool in_event_ = false;
  Cell* running_ = nullptr;  // the cell run_cell is running

  alignas(64) std::atomic<Cell*> run_queue_{nullptr};  // stack; reversed into ready_ each turn
  std::atomic<Command*> commands_{nullptr};
  std::atomic<bool> sleeping_{false};
  alignas(64) Cell* ready_head_ = nullptr;  // FIFO of cells to run (worker-owned)
  Cell* ready_tail_ = nullptr;
  std::vector<Cell*> cells_;
  char* read_buffer_ = nullptr;
  EventFunnel funnel_{*this};
  Outbox outbox_;
};

}  // namespace reheap::detail
