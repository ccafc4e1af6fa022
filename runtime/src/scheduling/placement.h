// Placement: the locality policy that brings a chatty pair of reactors onto one worker
// (RuntimeConfig::placement = Placement::kLocality, the default; see runtime.h for what the user
// sees and spawn_options.h for pinning).
//
// Why: a message to a reactor on another worker costs a cross-thread wake-up when that worker
// sleeps (25-50 us in the VMs we measure on), a message to one on the same worker costs a push on
// a list. Two reactors that mostly talk to each other go ~100x faster side by side.
//
// The window is short (64 messages), so that a pair started apart finds each other after about
// 128 messages, a few milliseconds of cross-thread round trips; the mutual condition and the
// hysteresis, not a long window, keep bursts from moving things about.
//
// What is counted, on the receive path: per cell, over a window of kWindow messages, an exact
// count of the messages from `partner` (the candidate elected by the previous window) and a
// Boyer-Moore majority vote that elects the next window's candidate. That is two compares and two
// increments per message, on the worker that owns the cell, with no clock and no shared write.
//
// The decision, once per window (evaluate, off the fast path):
//   1. The window is dominated by `partner` if at least kShareNum/kShareDen of its messages came
//      from it; the cell publishes that partner (or 0) in `dominant` for the partner to read.
//   2. Only a mutual pair is brought together: the partner's own last window must be dominated by
//      this reactor. A server that many clients talk to is dominated by none of them, so fan-in
//      and fan-out never move anything, and no worker collects every client of a busy reactor.
//   3. One side decides, the one with the smaller ActorRef, so that the two never move at once
//      and cross. It moves itself to the partner's worker, or asks the partner's worker to send
//      the partner over when the partner's worker holds more reactors than its own (load is
//      counted as reactors per worker: pairs do not all pile onto one worker).
//   4. Hysteresis: a reactor that moved (for any reason) stays at least kResidence on its
//      worker, and moves at most kMovesPerPeriod times per kPeriod.
// Never moved: a pinned reactor (an explicit SpawnOptions::worker, ReactorRestoreOptions::worker
// or a Runtime::move), one with open sockets (they belong to their worker's loop), one stopping
// or not yet started.
//
// A move is the one Runtime::move makes (cell_turn.cpp): between two of the reactor's events, its
// mailbox and timers come along, per-sender order holds. The worker never waits for it. Nothing a
// reactor observes depends on it (the worker's index, Reactor::worker(), aside), so a recording
// replays the same wherever the reactor ran.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace reheap::detail {

class Worker;
struct Cell;

class CellPlacement {
 public:
  static constexpr std::uint32_t kWindow = 64;  // messages per evaluation (see above)
  static constexpr std::uint32_t kShareNum = 3;  // dominated: >= 3/4 of a window from one sender
  static constexpr std::uint32_t kShareDen = 4;
  static constexpr std::chrono::milliseconds kResidence{100};
  static constexpr std::chrono::milliseconds kPeriod{1000};
  static constexpr std::uint32_t kMovesPerPeriod = 4;
  static_assert(kShareNum * 2 > kShareDen, "a dominant sender must be a strict majority");

  // Worker thread, per message handed to the reactor: `sender`'s ActorRef value (0 from outside).
  [[gnu::always_inline]] void observe(std::uint64_t sender) noexcept {
    from_partner_ += sender == partner_ ? 1u : 0u;
    if (sender == candidate_) {
      ++votes_;
    } else if (votes_ == 0) {
      candidate_ = sender;
      votes_ = 1;
    } else {
      --votes_;
    }
    ++window_;
  }
  // Worker thread, once per turn: whether evaluate is due.
  bool due() const noexcept { return window_ >= kWindow; }

  // A fresh occupant of the cell (spawn or restore), pinned or not.
  void reset(bool pinned) noexcept;
  void pin() noexcept { pinned_.store(true, std::memory_order_relaxed); }
  bool pinned() const noexcept { return pinned_.load(std::memory_order_relaxed); }

  // Worker thread: the cell moves now (for any reason); starts its residence.
  void note_move(std::chrono::steady_clock::time_point now) noexcept;
  // Worker thread: the hysteresis allows a move now.
  bool may_move(std::chrono::steady_clock::time_point now) const noexcept;

  // Closes the window: publishes `dominant`, elects the next partner. Returns the dominant
  // sender's ActorRef value, or 0.
  std::uint64_t close_window(std::uint64_t self) noexcept;
  // The dominant partner of the last window, or 0. Any thread.
  std::uint64_t dominant() const noexcept { return dominant_.load(std::memory_order_relaxed); }

 private:
  // ---- worker-owned ----
  std::uint64_t partner_ = 0;    // counted exactly in this window
  std::uint64_t candidate_ = 0;  // the majority vote's candidate for the next window
  std::uint32_t votes_ = 0;
  std::uint32_t from_partner_ = 0;
  std::uint32_t window_ = 0;
  std::uint32_t period_moves_ = 0;
  std::chrono::steady_clock::time_point moved_at_{};
  std::chrono::steady_clock::time_point period_start_{};
  // ---- read by the partner's worker ----
  std::atomic<std::uint64_t> dominant_{0};
  std::atomic<bool> pinned_{false};
};

// Worker thread `here`, between two of `c`'s events (c's window is due): evaluates the policy and
// may set c->move_to, or post a move of the partner to the partner's worker.
[[gnu::noinline, gnu::cold]] void evaluate_placement(Worker& here, Cell* c);

}  // namespace reheap::detail
