// A cell's turn on its worker: its start hooks, a batch of its messages, a move, its teardown,
// and supervision after each event (see worker.h for where a turn sits in the loop).
#include <algorithm>
#include <chrono>
#include <system_error>

#include "checkpoint/reactor_snapshot.h"
#include "checkpoint/snapshot_request.h"
#include "io/tcp.h"
#include "io/timer_service.h"
#include "messaging/mailbox_command.h"
#include "reactor/reactor_scope.h"
#include "recording/recorder.h"
#include "reheap/heap_scope.h"
#include "runtime_impl.h"
#include "scheduling/worker.h"
#include "supervision/supervisor.h"

namespace reheap::detail {

void Worker::after_hook(Cell* c) {
  if (c->supervision.failed) {
    c->supervision.failed = false;
    handle_failure(*this, c);  // restarts in place, or marks the cell kStopping
    // Restarted by an event outside the cell's turn (a timer, a socket): no turn is coming to run
    // the restored reactor's first hooks (its timers are re-armed there, and nothing may reach it
    // before on_restored), so run them now. Within a turn, run_messages does it.
    if (!c->started && c->state == CellState::kLive && running_ != c) run_start_hooks(c);
  }
  if (c->state == CellState::kStopping) {
    // Teardown happens in run_cell, the one place that holds the cell's queue token, so that a
    // freed cell is never still on a queue. It settles the stop.
    if (running_ != c && c->scheduled.exchange(1, std::memory_order_seq_cst) == 0) push_ready(c);
  } else if (c->restart != nullptr) {
    // Restarting exactly: its turns replay its past, and the restart settles the failure when it
    // is done (restart.cpp). A turn must come even if no message does.
    if (running_ != c && c->scheduled.exchange(1, std::memory_order_seq_cst) == 0) push_ready(c);
  } else {
    settled(c);  // restarted, or nothing was under way
  }
}

void Worker::request_stop(Cell* c, bool graceful) {
  if (c->state != CellState::kLive) return;
  c->state = CellState::kStopping;
  c->graceful_stop = graceful;
  count_settling(c);
  after_hook(c);
}

void Worker::run_cell(Cell* c) {
  if (c->state == CellState::kFree) return;  // stays parked (scheduled == 1)
  if (c->restart != nullptr) [[unlikely]] {
    // A slice of an exact restart, then the other reactors' turns and the loop's I/O: the cell
    // comes back at the next turn (still scheduled) until its restart is done.
    const HandlerClock clock(c);
    if (!continue_restart(*this, c)) {
      push_remote(c);
      return;
    }
    // Fallen back to its last snapshot: its restore hooks first, whose after_hook settles the
    // failure.
    if (!c->started && c->state == CellState::kLive) run_start_hooks(c);
  }
  // A move that a socket holds back (tcp_move.cpp) waits; the reactor runs here meanwhile.
  if (c->move_to != nullptr && move_out(c)) return;
  running_ = c;
  {
    const HandlerClock clock(c);
    run_messages(c, runtime_.config.batch);
  }
  running_ = nullptr;
  if (c->state == CellState::kStopping) {
    teardown(c);  // parks the cell
    return;
  }
  if (c->restart != nullptr) [[unlikely]] {
    push_remote(c);  // failed during this turn and restarts exactly: its replay begins next turn
    return;
  }
  if (c->placement.due()) [[unlikely]] evaluate_placement(*this, c);
  // Asked for by the placement policy just now; a socket may hold it back (then it waits).
  if (c->move_to != nullptr && move_out(c)) return;
  // Unschedule, then look again: a sender that pushed before our store saw scheduled == 1 and
  // left the cell to us.
  c->scheduled.store(0, std::memory_order_seq_cst);
  if (c->mailbox.nonempty() && c->scheduled.exchange(1, std::memory_order_seq_cst) == 0) {
    push_ready(c);
  }
}

void Worker::catch_up(Cell* c) {
  // Only a reactor that runs here and will stay: an arriving or departing one, or one that has
  // not started, goes through run_cell first. This thread found the cell by its reference when it
  // sent (CellTable::find acquires its id), so the worker read here is that occupant's or a later
  // one, stored with release by whoever wrote the fields read next: move_out (it wrote
  // `arriving`) or, for a new occupant, publish (runtime.cpp; `started` is still false).
  if (c->worker.load(std::memory_order_acquire) != this || c->arriving ||
      c->move_to != nullptr || c->state != CellState::kLive || !c->started || c->restart != nullptr) {
    return;
  }
  const std::uint32_t batch = runtime_.config.batch;
  const std::uint32_t budget = std::max(batch, std::min(c->mailbox.waiting(), kCatchUpLimit));
  running_ = c;
  {
    const HandlerClock clock(c);
    run_messages(c, budget);
  }
  running_ = nullptr;
  // Its queue entry stays where it is (the sends that fed it left it scheduled): that run tears
  // the reactor down if it is stopping now, or finds what arrived meanwhile.
}

void Worker::run_messages(Cell* c, std::uint32_t budget) {
  if (c->arriving) {
    c->arriving = false;
    adopt(c);
    rearm_timers(*this, c);
    attach_sockets(*this, c);
  }
  if (!c->started) {
    adopt(c);
    run_start_hooks(c);
    count_consumed();  // the spawn or restore itself
  }
  // Read once per run and again after anything that may change them (a failure, a slow-path
  // envelope): the loop's test stays one comparison.
  std::uint64_t self = c->id.load(std::memory_order_relaxed);
  bool runnable = c->state == CellState::kLive && c->restart == nullptr;
  Event event{.kind = EventKind::kMessage};
  in_event_ = true;  // sends go to the outbox, flushed after each event (outbox.h)
  std::uint32_t n = 0;
  while (runnable && n < budget) {
    Envelope* e = c->mailbox.pop();
    if (e == nullptr) break;
    ++n;
    // Counted envelopes (a bounded mailbox), dead letters and system messages: the slow path,
    // outside the reactor. What it leaves is a message for this reactor.
    if (e->counted != 0 || e->receiver != self || e->encoding == Encoding::kSystem) [[unlikely]] {
      funnel_.leave();
      in_event_ = false;
      const bool message = admit(c, e);
      if (!message) {
        free_envelope(e);
        count_consumed();
        after_hook(c);
        if (!c->started) run_start_hooks(c);  // restarted: on_restored before the next message
        self = c->id.load(std::memory_order_relaxed);
        runnable = c->state == CellState::kLive && c->restart == nullptr;
        in_event_ = true;
        continue;
      }
      in_event_ = true;
    }
    c->stats.messages_in++;
    const Message m = MessageAccess::of(*e);
    c->current_sender = e->sender;
    c->placement.observe(e->sender);
    event.message = &m;
    const bool live = funnel_.deliver(c, event);
    c->current_sender = 0;
    outbox_.flush();  // what the event sent, before the next event (outbox.h)
    free_envelope(e);
    count_consumed();
    if (!live) [[unlikely]] {
      funnel_.leave();
      in_event_ = false;
      after_hook(c);
      if (!c->started) run_start_hooks(c);  // restarted: on_restored before the next message
      self = c->id.load(std::memory_order_relaxed);
      runnable = c->state == CellState::kLive && c->restart == nullptr;
      in_event_ = true;
    }
  }
  in_event_ = false;
  funnel_.leave();
}

bool Worker::admit(Cell* c, Envelope* e) {
  // Bounded mailboxes only: how many waited, by the senders' count (drop-oldest needs it exact).
  const std::uint32_t waiting = c->mailbox.uncount(e);
  const std::uint32_t capacity = c->capacity.load(std::memory_order_relaxed);
  // Drop-oldest: while more than `capacity` wait, the oldest goes unhandled. Checked at every
  // message, not once per turn, because messages keep arriving while the handlers run. System
  // messages (a stop) are never shed.
  if (capacity != 0 && c->options.mailbox.overflow == OverflowPolicy::kDropOldest &&
      waiting > capacity && e->encoding != Encoding::kSystem &&
      e->receiver == c->id.load(std::memory_order_relaxed)) {
    c->stats.dropped++;
    return false;
  }
  if (e->receiver != c->id.load(std::memory_order_relaxed)) {
    runtime_.dead_letters.fetch_add(1, std::memory_order_relaxed);
    abandon_system_message(*e);
    return false;
  }
  if (e->encoding != Encoding::kSystem) return true;
  if (e->type_id == static_cast<std::uint64_t>(SystemMessage::kStop)) {
    c->state = CellState::kStopping;
    c->graceful_stop = true;
    count_settling(c);
  } else if (e->type_id == static_cast<std::uint64_t>(SystemMessage::kSnapshot)) {
    run_snapshot_request(c, *e);  // between two events: no hook is running
  } else if (e->type_id == static_cast<std::uint64_t>(SystemMessage::kCommand)) {
    run_mailbox_command(c, *e);
  }
  return false;
}

void Worker::run_start_hooks(Cell* c) {
  // A start hook that fails under kRestart restarts the reactor in place, which leaves `started`
  // false again: run the restored reactor's hooks before anything else reaches it. Each round
  // counts against max_restarts, so this ends.
  while (!c->started && c->state == CellState::kLive) {
    c->started = true;
    if (c->restored) {
      c->restored = false;
      start_restored(*this, c);
    } else {
      deliver(c, Event{.kind = EventKind::kStart});
      if (!c->supervision.failed && c->state == CellState::kLive &&
          c->options.policy == SupervisionPolicy::kRestart && c->snap.last_snapshot.empty()) {
        take_checkpoint(c);
      }
    }
    after_hook(c);
  }
}

bool Worker::move_out(Cell* c) {
  if (!park_sockets(*this, c)) return false;  // the sockets go first: they may refuse
  // This worker's queued flush of the recording will not find the reactor here any more.
  if (c->recorder != nullptr) c->recorder->flush_pending(c);
  Worker* to = c->move_to;
  c->move_to = nullptr;
  c->placement.note_move(std::chrono::steady_clock::now());
  c->stats.moves++;
  park_timers(*this, c);
  disown(c);
  c->arriving = true;
  c->worker.store(to, std::memory_order_release);
  to->push_remote(c);  // still scheduled: the new worker runs it next
  return true;
}

void Worker::adopt(Cell* c) {
  const std::size_t i = c->worker_position;
  if (i < cells_.size() && cells_[i] == c) return;  // already here (a restart in place)
  c->worker_position = cells_.size();
  HeapScope system(nullptr);
  cells_.push_back(c);
  population.store(static_cast<std::uint32_t>(cells_.size()), std::memory_order_relaxed);
}

void Worker::disown(Cell* c) {
  const std::size_t i = c->worker_position;
  if (i < cells_.size() && cells_[i] == c) {
    cells_[i] = cells_.back();
    cells_[i]->worker_position = i;
    cells_.pop_back();
    population.store(static_cast<std::uint32_t>(cells_.size()), std::memory_order_relaxed);
  }
}

void Worker::teardown(Cell* c) {
  if (c->restart != nullptr) c->graceful_stop = false;  // a half-replayed reactor hears no on_stop
  if (c->graceful_stop && c->started && c->reactor != nullptr) {
    c->state = CellState::kLive;  // on_stop may still send and close things
    deliver(c, Event{.kind = EventKind::kStop});
    if (c->supervision.failed) {
      report_stop_failure(*this, c);  // then it stops all the same
      c->supervision.failed = false;
    }
  }
  c->state = CellState::kStopping;
  close_timers(*this, c);
  close_sockets(*this, c);
  if (c->reactor != nullptr && c->graceful_stop) {
    ReactorScope scope(c);
    try {
      delete c->reactor;
    } catch (...) {
      // A throwing destructor: the heap goes anyway.
    }
  }
  c->reactor = nullptr;
  {
    HeapScope system(nullptr);
    c->restart.reset();   // a restart under way ends with its reactor
    c->recorder.reset();  // flushes what it holds, before the heap goes
    c->snap.clear();
    c->heap.reset();
    c->supervision.reset();
    c->options = SpawnOptions{};
  }
  // What waits in the mailbox now is dead: nobody will handle it. A snapshot request is still
  // answered (an answer to this reactor itself lands in this mailbox and is dropped here too), and
  // a command's caller is told.
  while (Envelope* e = c->mailbox.pop()) {
    c->mailbox.uncount(e);
    abandon_system_message(*e);
    free_envelope(e);
    runtime_.dead_letters.fetch_add(1, std::memory_order_relaxed);
    count_consumed();
  }
  // The stop settles only once the table no longer holds the cell: a wait_idle that sees nothing
  // in flight must see the reactor gone (alive() false). After release the cell may be another
  // reactor's already, so its flag is read and cleared before.
  const bool settling = c->settling;
  c->settling = false;
  disown(c);
  c->state = CellState::kFree;
  runtime_.cells.release(c);
  if (settling) count_consumed();
  runtime_.notify_stopped();
}

}  // namespace reheap::detail
