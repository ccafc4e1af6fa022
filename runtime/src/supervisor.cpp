// Supervision (see supervisor.h and spawn_options.h).
#include "supervisor.h"

#include <chrono>
#include <cstdio>
#include <exception>

#include "reactor_snapshot.h"
#include "reheap/heap_scope.h"
#include "runtime_impl.h"
#include "worker.h"

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
                 "reheap: reactor %llu%s%s%s failed in %s: %s; %s (RuntimeConfig::on_failure or "
                 "SpawnOptions::supervisor handles failures instead of this message)\n",
                 static_cast<unsigned long long>(failure.reactor.value()), failure.name.empty() ? "" : " (\"",
                 failure.name.c_str(), failure.name.empty() ? "" : "\")", failure.handler.c_str(),
                 failure.what.c_str(), to_string(failure.failure_action()));
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
  return failure;
}

}  // namespace

void handle_failure(Worker& w, Cell* c) {
  HeapScope system(nullptr);
  RuntimeImpl& rt = w.runtime();
  ReactorFailed failure = failure_of(c);

  if (c->options.policy == SupervisionPolicy::kRestart && may_restart(c)) {
    try {
      restore_in_place(c);
      c->supervision.restart_times.push_back(std::chrono::steady_clock::now());
      c->stats.restarts++;
      failure.action = static_cast<std::uint8_t>(FailureAction::kRestarted);
      failure.restarts = c->stats.restarts;
      report(rt, c, failure);
      return;
    } catch (const std::exception& e) {
      // Report the original failure, then the failed restore; the reactor stops.
      failure.action = static_cast<std::uint8_t>(FailureAction::kStopped);
      report(rt, c, failure);
      failure.kind = static_cast<std::uint8_t>(FailureKind::kRestoreFailed);
      failure.what = e.what();
      failure.handler = "restart";
      c->state = CellState::kStopping;
      c->graceful_stop = false;
      report(rt, c, failure);
      return;
    }
  }
  failure.action = static_cast<std::uint8_t>(FailureAction::kStopped);
  c->state = CellState::kStopping;
  c->graceful_stop = false;
  report(rt, c, failure);
}

void report_stop_failure(Worker& w, Cell* c) {
  HeapScope system(nullptr);
  ReactorFailed failure = failure_of(c);
  failure.action = static_cast<std::uint8_t>(FailureAction::kStopped);
  report(w.runtime(), c, failure);
}

}  // namespace reheap::detail
