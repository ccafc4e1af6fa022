// Placement: the window's bookkeeping and the locality decision (see placement.h).
#include "scheduling/placement.h"

#include "io/tcp.h"
#include "runtime_impl.h"
#include "scheduling/worker.h"

namespace reheap::detail {

void CellPlacement::reset(bool pinned) noexcept {
  partner_ = candidate_ = 0;
  votes_ = from_partner_ = window_ = period_moves_ = 0;
  // The epoch: a new reactor may move at once (its first two windows must pass first anyway).
  moved_at_ = period_start_ = {};
  dominant_.store(0, std::memory_order_relaxed);
  pinned_.store(pinned, std::memory_order_relaxed);
}

void CellPlacement::note_move(std::chrono::steady_clock::time_point now) noexcept {
  moved_at_ = now;
  if (now - period_start_ >= kPeriod) {
    period_start_ = now;
    period_moves_ = 0;
  }
  ++period_moves_;
}

bool CellPlacement::may_move(std::chrono::steady_clock::time_point now) const noexcept {
  if (now - moved_at_ < kResidence) return false;
  return now - period_start_ >= kPeriod || period_moves_ < kMovesPerPeriod;
}

std::uint64_t CellPlacement::close_window(std::uint64_t self) noexcept {
  const bool dominated = partner_ != 0 && partner_ != self &&
                         std::uint64_t{from_partner_} * kShareDen >= std::uint64_t{window_} * kShareNum;
  const std::uint64_t dominant = dominated ? partner_ : 0;
  dominant_.store(dominant, std::memory_order_relaxed);
  // Without a majority (votes_ == 0 at the end) no sender can dominate the next window.
  partner_ = votes_ > 0 ? candidate_ : 0;
  votes_ = from_partner_ = window_ = 0;
  return dominant;
}

namespace {

// Whether the policy may move `c` now; on `c`'s worker.
bool movable(Cell* c) {
  return !c->placement.pinned() && !has_sockets(c) && c->placement.may_move(std::chrono::steady_clock::now());
}

// The partner's worker, between two of the partner's events: sends the partner to `to` if it is
// still there and may move. The partner may have moved, stopped or been replaced since the
// request was posted; each is checked here, where its cell's fields are this thread's.
void pull(RuntimeImpl& rt, std::uint64_t partner, Worker* to) {
  Cell* o = rt.cells.find(ActorRef(partner));
  if (o == nullptr || !rt.accepting.load(std::memory_order_relaxed)) return;
  Worker* w = o->worker.load(std::memory_order_relaxed);
  if (!w->on_this_thread() || w == to) return;
  if (o->state != CellState::kLive || !o->started || o->move_to != nullptr) return;
  if (!movable(o)) return;
  o->move_to = to;
  rt.placement_moves.fetch_add(1, std::memory_order_relaxed);
  if (o->scheduled.exchange(1, std::memory_order_seq_cst) == 0) w->schedule(o);
}

}  // namespace

void evaluate_placement(Worker& here, Cell* c) {
  RuntimeImpl& rt = here.runtime();
  const std::uint64_t self = c->id.load(std::memory_order_relaxed);
  const std::uint64_t partner = c->placement.close_window(self);
  if (partner == 0 || rt.config.placement != Placement::kLocality) return;
  // The smaller reference decides for the pair; the other only publishes its `dominant`.
  if (self > partner) return;
  if (c->state != CellState::kLive || !c->started || c->move_to != nullptr) return;
  if (!rt.accepting.load(std::memory_order_relaxed)) return;
  Cell* other = rt.cells.find(ActorRef(partner));
  if (other == nullptr || other->placement.dominant() != self) return;  // not a mutual pair
  Worker* there = other->worker.load(std::memory_order_acquire);
  if (there == nullptr || there == &here) return;  // together already
  const bool can_go = movable(c);
  const bool can_pull = !other->placement.pinned();
  // Balance: the pair settles on the worker with fewer reactors; on a tie, the partner's.
  const bool prefer_pull =
      can_pull && here.population.load(std::memory_order_relaxed) <
                      there->population.load(std::memory_order_relaxed);
  if (can_go && !prefer_pull) {
    c->move_to = there;  // run_cell moves it out after this turn
    rt.placement_moves.fetch_add(1, std::memory_order_relaxed);
  } else if (can_pull) {
    RuntimeImpl* runtime = &rt;
    Worker* to = &here;
    there->post([runtime, partner, to] { pull(*runtime, partner, to); });
  }
}

}  // namespace reheap::detail
