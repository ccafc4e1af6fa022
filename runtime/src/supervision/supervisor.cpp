// Supervision (see supervisor.h and spawn_options.h).
#include "supervision/supervisor.h"

#include <chrono>
#include <cstdio>
#include <exception>

#include "checkpoint/reactor_snapshot.h"
#include "reheap/heap_scope.h"
#include "runtime_impl.h"
#include "scheduling/worker.h"
#include "supervision/restart.h"

namespace reheap {

const char* to_string(FailureKind k) noexcept {
  switch (k) {
    case FailureKind::kException: return "exception";
    case FailureKind::kOutOfMemory: return "out of memory";
    case FailureKind::kRestoreFailed: return "restore failed";
  }
  return "unknown";
}

const char* to_string(FailureAction a) noexcept {
  switch (a) {
    case FailureAction::kStopped: return "stopped";
    case FailureAction::kRestarted: return "restarted";
  }
  return "unknown";
}

std::string to_string(const ReactorFailed& f) {
  HeapScope system(nullptr);
  std::string who;
  if (!f.reactor_type.empty()) who = f.reactor_type;
  if (!f.name.empty()) who += (who.empty() ? "\"" : " \"") + f.name + "\"";
  std::string text = "reactor " + std::to_string(f.reactor.value()) + (who.empty() ? "" : " (" + who + ")") +
                     " failed in " + f.handler + ": " + (f.exception_type.empty() ? "" : f.exception_type + ": ") +
                     f.what + "; " + to_string(f.failure_action());
  if (!f.restart.empty()) text += " (" + f.restart + ")";
  return text;
}

}  // namespace reheap

namespace reheap::detail {
namespace {

bool may_restart(Cell* c) {
  const auto now = std::chrono::steady_clock::now();
  while (!c->supervision.restart_times.empty() && now - c->supervision.restart_times.front() > c->options.restart_window) {
    c->supervision.restart_times.pop_front();
  }
  return static_cast<int>(c->supervision.restart_times.size()) < c->options.max_restarts;
}

void report(RuntimeImpl& rt, Cell* c, const ReactorFailed& failure) {
  rt.failures.fetch_add(1, std::memory_order_relaxed);
  if (rt.config.on_failure) {
    try {
      rt.config.on_failure(failure);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "reheap: the on_failure callback threw: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "reheap: the on_failure callback threw\n");
    }
  }
  if (c->options.supervisor) {
    SendResult result = SendResult::kOk;
    Envelope* e = encode(failure, &result);
    send_envelope(c, c->options.supervisor, e, result);
  }
  if (!rt.config.on_failure && !c->options.supervisor) {
    // Nothing of the program's hears of it: without this line a reactor would vanish silently,
    // its later sends answered kNoSuchReactor.
    std::fprintf(stderr,
                 "reheap: %s (RuntimeConfig::on_failure or SpawnOptions::supervisor handles failures "
                 "instead of this message)\n",
                 to_string(failure).c_str());
  }
}

// The report of c's failure, before its outcome is known.
ReactorFailed failure_of(const Cell* c) {
  ReactorFailed failure;
  failure.reactor = c->ref();
  failure.name = c->options.name;
  failure.what = c->supervision.what;
  failure.handler = c->supervision.hook;
  failure.kind = static_cast<std::uint8_t>(c->supervision.kind);
  failure.restarts = c->stats.restarts;
  failure.reactor_type = c->supervision.reactor_type;
  failure.exception_type = c->supervision.exception_type;
  return failure;
}

void count_restart(Cell* c, ReactorFailed& failure) {
  c->supervision.restart_times.push_back(std::chrono::steady_clock::now());
  c->stats.restarts++;
  failure.action = static_cast<std::uint8_t>(FailureAction::kRestarted);
  failure.restarts = c->stats.restarts;
}

void stop_after(Cell* c) {
  c->state = CellState::kStopping;
  c->graceful_stop = false;
}

// Restores c from its last snapshot (restore_in_place) and says what that loses, or stops it
// when even that fails. `failure` is reported either way; `not_exact` says why the restart could
// not replay the reactor's recording.
void restart_from_snapshot(RuntimeImpl& rt, Cell* c, ReactorFailed& failure, const std::string& not_exact) {
  try {
    restore_in_place(c);
    count_restart(c, failure);
    const std::string from = c->snap.last_snapshot.empty() ? std::string("the checkpoint taken after on_start")
                                                           : c->snap.last_snapshot.string();
    failure.restart = "from " + from + ", losing the events handled since; not exactly: " + not_exact;
    report(rt, c, failure);
  } catch (const std::exception& e) {
    // Report the original failure, then the failed restore; the reactor stops.
    failure.action = static_cast<std::uint8_t>(FailureAction::kStopped);
    report(rt, c, failure);
    failure.kind = static_cast<std::uint8_t>(FailureKind::kRestoreFailed);
    failure.what = e.what();
    failure.exception_type.clear();
    failure.handler = "restart";
    failure.restart.clear();
    stop_after(c);
    report(rt, c, failure);
  }
}

}  // namespace

void handle_failure(Worker& w, Cell* c) {
  HeapScope system(nullptr);
  RuntimeImpl& rt = w.runtime();
  ReactorFailed failure = failure_of(c);

  if (c->options.policy == SupervisionPolicy::kRestart && may_restart(c)) {
    std::string not_exact;
    try {
      if (begin_exact_restart(w, c, &not_exact)) {
        count_restart(c, failure);
        failure.restart = "exact: its recording is replayed up to the failing event";
        report(rt, c, failure);
        return;
      }
    } catch (const std::exception& e) {
      not_exact = std::string("its recording could not be restored: ") + e.what();
    }
    restart_from_snapshot(rt, c, failure, not_exact);
    return;
  }
  failure.action = static_cast<std::uint8_t>(FailureAction::kStopped);
  stop_after(c);
  report(rt, c, failure);
}

void restart_from_snapshot_instead(Worker& w, Cell* c, const std::string& why) {
  HeapScope system(nullptr);
  ReactorFailed failure = failure_of(c);
  failure.kind = static_cast<std::uint8_t>(FailureKind::kRestoreFailed);
  failure.handler = "restart";
  failure.what = "the exact restart stopped: " + why;
  failure.exception_type.clear();
  // The restart was counted when it began.
  c->supervision.restart_times.pop_back();
  c->stats.restarts--;
  restart_from_snapshot(w.runtime(), c, failure, why);
  // Restored: its restore hooks run next (Worker::run_cell), and their after_hook settles the
  // failure; stopping: the teardown does.
}

void report_stop_failure(Worker& w, Cell* c) {
  HeapScope system(nullptr);
  ReactorFailed failure = failure_of(c);
  failure.action = static_cast<std::uint8_t>(FailureAction::kStopped);
  report(w.runtime(), c, failure);
}

}  // namespace reheap::detail
