// Worker: the loop, its queues and wake-ups, and the turn (see worker.h for the order of things;
// a cell's own turn is in cell_turn.cpp).
#include "scheduling/worker.h"

#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "recording/fatal_signal.h"
#include "reheap/heap_scope.h"
#include "reheap/zone.h"
#include "runtime_impl.h"
#include "scheduling/idle_purge.h"

namespace reheap::detail {
namespace {

void check_uv(int rc, const char* what) {
  if (rc != 0) {
    std::fprintf(stderr, "reheap: worker: %s: %s\n", what, uv_strerror(rc));
    std::abort();
  }
}

// In milliseconds (idle_purge.h); relaxed: a timer started just before a change may use the old one.
std::atomic<std::int64_t> g_idle_purge_delay_ms{kDefaultIdlePurgeDelay.count()};

}  // namespace

std::chrono::milliseconds idle_purge_delay() noexcept {
  return std::chrono::milliseconds(g_idle_purge_delay_ms.load(std::memory_order_relaxed));
}

std::chrono::milliseconds set_idle_purge_delay(std::chrono::milliseconds delay) noexcept {
  return std::chrono::milliseconds(g_idle_purge_delay_ms.exchange(delay.count(), std::memory_order_relaxed));
}


Worker::Worker(RuntimeImpl& runtime, int index) : runtime_(runtime), index_(index) {
  check_uv(uv_loop_init(&loop_), "uv_loop_init");
  loop_.data = this;
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  check_uv(uv_poll_init(&loop_, &wake_poll_, wake_fd_), "uv_poll_init");
  wake_poll_.data = this;
  check_uv(uv_idle_init(&loop_, &idle_), "uv_idle_init");
  idle_.data = this;
  check_uv(uv_prepare_init(&loop_, &prepare_), "uv_prepare_init");
  prepare_.data = this;
  check_uv(uv_check_init(&loop_, &check_), "uv_check_init");
  check_.data = this;
  check_uv(uv_timer_init(&loop_, &purge_timer_), "uv_timer_init");
  purge_timer_.data = this;
  uv_unref(reinterpret_cast<uv_handle_t*>(&purge_timer_));  // never what keeps the loop running
  check_uv(uv_timer_init(&loop_, &flush_timer_), "uv_timer_init");
  flush_timer_.data = this;
  uv_unref(reinterpret_cast<uv_handle_t*>(&flush_timer_));
  read_buffer_ = static_cast<char*>(std::malloc(kReadBufferSize));
  if (read_buffer_ == nullptr) throw std::bad_alloc();
}

Worker::~Worker() {
  if (wake_fd_ >= 0) ::close(wake_fd_);
  std::free(read_buffer_);
}

void Worker::start() {
  HeapScope system(nullptr);  // the thread's own state must not land in a caller's heap
  thread_ = std::thread([this] { thread_main(); });
}

void Worker::join() {
  if (thread_.joinable()) thread_.join();
}

constinit thread_local Worker* t_worker [[gnu::tls_model("initial-exec")]] = nullptr;

void Worker::pin() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  const int count = CPU_COUNT(&allowed);
  if (count <= 0) return;
  int nth = index_ % count;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed) || nth-- != 0) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) {
      std::fprintf(stderr, "reheap: worker %d: could not pin to CPU %d\n", index_, cpu);
    }
    return;
  }
}

void Worker::thread_main() {
  if (runtime_.config.pin_workers) pin();
  // A write to a connection the peer has reset raises SIGPIPE in the writing thread, and its
  // default action ends the process. Blocked here, the write fails with EPIPE instead and the
  // reactor hears on_closed; the process-wide disposition stays the program's business.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  // A recorded reactor that overflows its stack still leaves a crash bundle (fatal_signal.h).
  recording::ensure_alternate_signal_stack();
  t_worker = this;
  check_uv(uv_poll_start(&wake_poll_, UV_READABLE, &Worker::on_wake), "uv_poll_start");
  check_uv(uv_prepare_start(&prepare_, &Worker::on_prepare), "uv_prepare_start");
  check_uv(uv_check_start(&check_, &Worker::on_check), "uv_check_start");
  uv_run(&loop_, UV_RUN_DEFAULT);
  // Stopped by shutdown(): every reactor is gone; close what is left and let the closes finish.
  uv_walk(
      &loop_,
      [](uv_handle_t* h, void*) {
        if (!uv_is_closing(h)) uv_close(h, nullptr);
      },
      nullptr);
  uv_run(&loop_, UV_RUN_DEFAULT);
  if (uv_loop_close(&loop_) != 0) {
    std::fprintf(stderr, "reheap: worker %d: loop closed with handles open\n", index_);
  }
  t_worker = nullptr;
}

// ---- queues ----------------------------------------------------------------------------------

void Worker::push_ready(Cell* c) noexcept {
  c->next_ready = nullptr;
  if (ready_tail_ == nullptr) {
    ready_head_ = c;
  } else {
    ready_tail_->next_ready = c;
  }
  ready_tail_ = c;
  if (!idle_active_) {
    idle_active_ = true;
    uv_idle_start(&idle_, &Worker::on_idle);
  }
}

void Worker::push_remote(Cell* c) noexcept {
  stack_push<Cell, &Cell::next_ready>(run_queue_, c);
  if (sleeping_.load(std::memory_order_seq_cst) && sleeping_.exchange(false)) wake();
}

void Worker::wake() noexcept {
  wakeups.fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t one = 1;
  // EAGAIN means the counter is already non-zero: the worker will wake anyway.
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void Worker::push_command(Command* cmd) noexcept {
  stack_push<Command, &Command::next>(commands_, cmd);
  if (on_this_thread()) {
    if (!idle_active_) {
      idle_active_ = true;
      uv_idle_start(&idle_, &Worker::on_idle);
    }
  } else if (sleeping_.load(std::memory_order_seq_cst) && sleeping_.exchange(false)) {
    wake();
  }
}

bool Worker::work_queued() const noexcept {
  return ready_head_ != nullptr || run_queue_.load(std::memory_order_seq_cst) != nullptr ||
         commands_.load(std::memory_order_seq_cst) != nullptr;
}

// ---- loop callbacks --------------------------------------------------------------------------

void Worker::on_wake(uv_poll_t* handle, int, int) {
  auto* w = static_cast<Worker*>(handle->data);
  std::uint64_t value;
  [[maybe_unused]] const ssize_t n = ::read(w->wake_fd_, &value, sizeof value);
  // The turn runs in the check phase, right after this poll phase.
}

void Worker::on_idle(uv_idle_t*) {
  // Being active is the point: poll does not block while work is queued.
}

void Worker::on_prepare(uv_prepare_t* handle) {
  auto* w = static_cast<Worker*>(handle->data);
  if (w->work_queued()) {
    // Keep poll from blocking: the check phase right after it runs the turn.
    if (!w->idle_active_) {
      w->idle_active_ = true;
      uv_idle_start(&w->idle_, &Worker::on_idle);
    }
    return;
  }
  if (w->idle_active_) {
    w->idle_active_ = false;
    uv_idle_stop(&w->idle_);
  }
  const auto spin = w->runtime_.config.spin;
  if (spin.count() > 0) {
    const auto until = std::chrono::steady_clock::now() + spin;
    while (std::chrono::steady_clock::now() < until) {
      if (w->work_queued()) {
        w->idle_active_ = true;
        uv_idle_start(&w->idle_, &Worker::on_idle);
        return;
      }
    }
  }
  if (w->ran_cells_ && (!w->cells_.empty() || reheap::Zone::heap_cache_bytes() != 0)) {
    w->ran_cells_ = false;
    const auto delay = static_cast<std::uint64_t>(idle_purge_delay().count());
    uv_timer_start(&w->purge_timer_, &Worker::on_purge, delay, 0);
  }
  w->sleeping_.store(true, std::memory_order_seq_cst);
  if (w->work_queued()) {
    w->sleeping_.store(false, std::memory_order_relaxed);
    w->idle_active_ = true;
    uv_idle_start(&w->idle_, &Worker::on_idle);
  }
}

// Half a second asleep: give back the heaps the zone caches, and the freed memory the heaps living
// here keep (this thread is theirs between turns; purging moves no block, zone.h "Retention").
// Free page runs and free class lanes read as zero once purged, which a recording's digests would
// see: a recorded reactor keeps them, so that its replay, purged or not, reads the same bytes. A
// recorded reactor's log writes the block it holds instead (one write per pause, never per event).
void Worker::on_purge(uv_timer_t* handle) {
  reheap::Zone::purge_heap_cache();
  auto* w = static_cast<Worker*>(handle->data);
  const bool retained = reheap::Zone::retained_resident_bytes() != 0;
  for (Cell* c : w->cells_) {
    if (c->heap == nullptr) continue;
    if (retained) c->heap->purge_retained();
    if (c->recorder == nullptr) {
      c->heap->purge_free_runs();
      c->heap->purge_free_lanes();
    } else {
      c->recorder->flush_pending(c);
    }
  }
  w->idle_purges.fetch_add(1, std::memory_order_relaxed);
}

void Worker::queue_recording_flush(Cell* c, std::chrono::milliseconds within) {
  {
    HeapScope system(nullptr);  // called at a recorded event's end, the reactor's heap current
    queued_flushes_.push_back(QueuedFlush{c, c->id.load(std::memory_order_relaxed)});
  }
  uv_update_time(&loop_);
  const auto delay = static_cast<std::uint64_t>(within.count());
  const std::uint64_t due = uv_now(&loop_) + delay;
  if (flush_due_ms_ == 0 || due < flush_due_ms_) {
    flush_due_ms_ = due;
    uv_timer_start(&flush_timer_, &Worker::on_recording_flush, delay, 0);
  }
}

// Between two turns, so between two events of every reactor here.
void Worker::on_recording_flush(uv_timer_t* handle) {
  auto* w = static_cast<Worker*>(handle->data);
  w->flush_due_ms_ = 0;
  std::vector<QueuedFlush> due;
  due.swap(w->queued_flushes_);
  for (const QueuedFlush& q : due) {
    Cell* c = q.cell;
    if (c->id.load(std::memory_order_relaxed) != q.ref || c->worker.load(std::memory_order_relaxed) != w ||
        c->recorder == nullptr || c->state == CellState::kFree) {
      continue;
    }
    c->recorder->flush_pending(c);
  }
  HeapScope system(nullptr);
  due.clear();
  if (w->queued_flushes_.empty()) w->queued_flushes_.swap(due);  // keep the capacity
}

void Worker::on_check(uv_check_t* handle) {
  auto* w = static_cast<Worker*>(handle->data);
  w->sleeping_.store(false, std::memory_order_relaxed);
  w->turn();
}

// ---- the turn --------------------------------------------------------------------------------

void Worker::run_commands() {
  Command* fifo = stack_take_fifo<Command, &Command::next>(commands_);
  while (fifo != nullptr) {
    Command* next = fifo->next;
    fifo->run();
    delete fifo;
    fifo = next;
  }
}

void Worker::turn() {
  run_commands();
  // Remote cells join the ready list in the order they were scheduled.
  for (Cell* c = stack_take_fifo<Cell, &Cell::next_ready>(run_queue_); c != nullptr;) {
    Cell* next = c->next_ready;
    push_ready(c);
    c = next;
  }
  // Run the cells that are ready now. Cells that they made ready (sends on this worker) run in
  // further passes, up to kLocalRuns cell runs in all, before the loop polls I/O again: a chatty
  // pair on one worker then pays one trip through the loop (an epoll_wait and its clock reads)
  // per kLocalRuns hand-overs instead of per message, and the bound still lets sockets and
  // timers in (a reactor sending itself messages cannot starve them).
  std::uint32_t runs = 0;
  while (ready_head_ != nullptr && runs < kLocalRuns) {
    Cell* c = ready_head_;
    ready_head_ = ready_tail_ = nullptr;
    while (c != nullptr) {
      Cell* next = c->next_ready;
      outbox_.forget_fed();
      run_cell(c);
      ++runs;
      ran_cells_ = true;
      // A run that fed a consumer on this worker at least a batch (a stream, a fan-in) lets it
      // catch up now, before the rest of the pass, rather than at its place in the queue, which
      // may be behind every other producer. Its backlog is then handled while it is in the cache
      // and its memory goes back to the message allocator warm, for the producers' next sends;
      // in the queue's order, a fan-in's senders would fault in fresh pages for everything they
      // send before the consumer handled any of it. A chatty pair (one message per event) never
      // reaches a batch, so it keeps the plain FIFO order.
      if (outbox_.fed_count() >= runtime_.config.batch) [[unlikely]] {
        Cell* fed = outbox_.fed();
        if (fed != c) {
          catch_up(fed);
          ++runs;
        }
      }
      c = next;
    }
  }
}

}  // namespace reheap::detail
