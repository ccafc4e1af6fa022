// Timers: uv_timer_t per reactor timer (see timer_service.h).
#include "io/timer_service.h"

#include <uv.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "reactor/reactor_access.h"
#include "reheap/heap_scope.h"
#include "scheduling/worker.h"

namespace reheap::detail {

struct TimerHandle {
  uv_timer_t timer;
  Cell* cell;
  std::uint64_t owner;  // the cell's occupant when started: a recycled cell ignores the timer
  TimerId id;
  std::uint64_t period_ms;
  // When the reactor asked it to fire next, in uv_hrtime() nanoseconds. The time left that a
  // move or a checkpoint carries over and a snapshot records comes from it. libuv's own time left
  // counts from a millisecond clock lagging by up to a kernel tick and includes arm()'s extra
  // millisecond: carried over, it made each move or restore a little later than the last.
  std::uint64_t due_ns = 0;
  std::uint64_t left_ns = 0;  // while parked: what was left then (ParkedTime::kStoodStill)
  bool parked = false;        // between two workers: no loop owns `timer`
};

namespace {

std::uint64_t to_ms(std::chrono::nanoseconds d) noexcept {
  const auto ns = static_cast<std::uint64_t>(d.count());
  return (ns + 999'999) / 1'000'000;
}

void on_closed(uv_handle_t* h) {
  HeapScope system(nullptr);
  delete static_cast<TimerHandle*>(h->data);
}

void on_fire(uv_timer_t* t) {
  auto* h = static_cast<TimerHandle*>(t->data);
  Cell* c = h->cell;
  auto* w = static_cast<Worker*>(t->loop->data);
  if (c->id.load(std::memory_order_relaxed) != h->owner) return;
  h->due_ns = uv_hrtime() + h->period_ms * 1'000'000;  // libuv repeats a period after firing
  const TimerId id = h->id;
  if (h->period_ms == 0) {
    // One-shot: forget it before the hook, which may start a timer with the same map slot.
    HeapScope system(nullptr);
    c->timers.erase(id);
    uv_close(reinterpret_cast<uv_handle_t*>(&h->timer), on_closed);
  }
  w->deliver_event(c, Event{.kind = EventKind::kTimer, .timer = id});
}

std::uint64_t left_ns(std::uint64_t due_ns) {
  const std::uint64_t now = uv_hrtime();
  return due_ns > now ? due_ns - now : 0;
}

void arm(Worker& w, TimerHandle* h, std::uint64_t delay_ms) {
  uv_timer_init(w.loop(), &h->timer);
  h->timer.data = h;
  // A timer is due `delay` after the loop's clock, which libuv reads only when the loop wakes
  // up: after a long hook it lags, and the timer would fire early by as much. Read it now.
  uv_update_time(w.loop());
  // The clock counts whole milliseconds, truncated, so a timer due at tick T + d can fire up to a
  // millisecond less than d after it was started during tick T: one more tick makes "not before
  // its delay" hold. A zero delay needs no margin.
  uv_timer_start(&h->timer, on_fire, delay_ms == 0 ? 0 : delay_ms + 1, h->period_ms);
}

}  // namespace

void start_timer(Worker& w, Cell* c, TimerId id, std::chrono::nanoseconds delay,
                 std::chrono::nanoseconds period) {
  HeapScope system(nullptr);
  auto* h = new TimerHandle{};
  h->cell = c;
  h->owner = c->id.load(std::memory_order_relaxed);
  h->id = id;
  h->period_ms = period.count() > 0 ? std::max<std::uint64_t>(1, to_ms(period)) : 0;
  h->due_ns = uv_hrtime() + static_cast<std::uint64_t>(std::max<std::int64_t>(0, delay.count()));
  c->timers.emplace(id, h);
  arm(w, h, to_ms(delay));
}

void cancel_timer(Worker&, Cell* c, TimerId id) {
  HeapScope system(nullptr);
  auto it = c->timers.find(id);
  if (it == c->timers.end()) return;
  TimerHandle* h = it->second;
  c->timers.erase(it);
  uv_close(reinterpret_cast<uv_handle_t*>(&h->timer), on_closed);
}

void close_timers(Worker&, Cell* c) {
  HeapScope system(nullptr);
  for (auto& [id, h] : c->timers) {
    if (h->parked) {
      delete h;  // attached to no loop
    } else {
      uv_close(reinterpret_cast<uv_handle_t*>(&h->timer), on_closed);
    }
  }
  c->timers.clear();
}

void park_timers(Worker&, Cell* c) {
  // Each handle is closed on this loop; a fresh TimerHandle carries the time left to the next.
  HeapScope system(nullptr);
  for (auto& [id, h] : c->timers) {
    if (h->parked) continue;  // never re-armed here (moved on before its first turn)
    auto* parked = new TimerHandle{};
    parked->cell = c;
    parked->owner = h->owner;
    parked->id = id;
    parked->period_ms = h->period_ms;
    parked->due_ns = h->due_ns;
    parked->left_ns = left_ns(h->due_ns);
    parked->parked = true;
    uv_close(reinterpret_cast<uv_handle_t*>(&h->timer), on_closed);
    h = parked;
  }
}

void rearm_timers(Worker& w, Cell* c, ParkedTime time) {
  for (auto& [id, h] : c->timers) {
    const std::uint64_t left = time == ParkedTime::kStoodStill ? h->left_ns : left_ns(h->due_ns);
    h->parked = false;
    h->due_ns = uv_hrtime() + left;
    arm(w, h, to_ms(std::chrono::nanoseconds(left)));
  }
}

void record_timers(Cell* c) {
  // Runs with the reactor's heap current: the vector lives in the reactor.
  Reactor& r = *c->reactor;
  auto& saved = ReactorAccess::saved_timers(r);
  saved.clear();
  for (auto& [id, h] : c->timers) {
    // A parked timer (a move under way) was due when it was: time runs on during a move.
    saved.push_back(ReactorAccess::SavedTimer{id, static_cast<std::int64_t>(left_ns(h->due_ns)),
                                              static_cast<std::int64_t>(h->period_ms) * 1'000'000});
  }
}

void restart_recorded_timers(Worker& w, Cell* c) {
  auto& saved = ReactorAccess::saved_timers(*c->reactor);
  for (const auto& t : saved) {
    start_timer(w, c, t.id, std::chrono::nanoseconds(t.due_in_ns), std::chrono::nanoseconds(t.period_ns));
  }
  HeapScope scope(c->heap.get());
  saved.clear();
}

std::optional<TimerState> timer_state(const Cell* c, TimerId id) {
  const auto it = c->timers.find(id);
  if (it == c->timers.end()) return std::nullopt;
  return TimerState{id, it->second->due_ns, it->second->period_ms};
}

void add_parked_timer(Cell* c, const TimerState& timer) {
  HeapScope system(nullptr);
  auto* h = new TimerHandle{};
  h->cell = c;
  h->owner = c->id.load(std::memory_order_relaxed);
  h->id = timer.id;
  h->period_ms = timer.period_ms;
  h->due_ns = timer.due_ns;
  h->left_ns = left_ns(timer.due_ns);
  h->parked = true;
  if (!c->timers.emplace(timer.id, h).second) delete h;  // it lives: nothing to bring back
}

void forget_timers_from(Cell* c, TimerId first) {
  HeapScope system(nullptr);
  for (auto it = c->timers.lower_bound(first); it != c->timers.end(); it = c->timers.erase(it)) {
    TimerHandle* h = it->second;
    if (h->parked) {
      delete h;  // attached to no loop
    } else {
      uv_close(reinterpret_cast<uv_handle_t*>(&h->timer), on_closed);
    }
  }
}

}  // namespace reheap::detail
