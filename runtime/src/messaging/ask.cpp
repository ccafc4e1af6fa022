// Runtime::ask: the asker reactor and the slot its answer waits in (ask_slot.h).
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <utility>

#include "messaging/ask_slot.h"
#include "messaging/envelope.h"
#include "reactor/reactor_access.h"
#include "reheap/heap_scope.h"
#include "reheap/runtime.h"
#include "runtime_impl.h"
#include "scheduling/worker.h"

namespace reheap {
namespace detail {

bool AskSlot::deliver(const Message& message) {
  if (message.type_id() != reply_type_) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  if (answered_ || abandoned_) return false;
  {
    // The reply and a decode error's text must outlive the asker's heap.
    HeapScope system(nullptr);
    try {
      decode_(message, reply_);
    } catch (...) {
      error_ = std::current_exception();
    }
  }
  answered_ = true;
  settled_.store(true, std::memory_order_release);
  changed_.notify_all();
  return true;
}

void AskSlot::abandon() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  abandoned_ = true;
}

void AskSlot::close(SendResult refusal) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!answered_ && !closed_) refusal_.store(refusal, std::memory_order_release);
  closed_ = true;
  settled_.store(true, std::memory_order_release);
  changed_.notify_all();
}

bool AskSlot::wait(std::chrono::nanoseconds timeout) {
  // An answer usually comes within the spin: waiting for it awake saves the futex sleep and the
  // wake-up, which cost more than the spin in the VMs measured (docs/benchmarks.md, "Ask").
  const auto start = std::chrono::steady_clock::now();
  const auto spin_until = start + std::min(timeout, std::chrono::nanoseconds(kSpin));
  while (!settled_.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < spin_until) {
  }
  std::unique_lock<std::mutex> lock(mutex_);
  const auto settled = [this] { return answered_ || closed_; };
  // The spin is part of the timeout. A timeout of years would overflow the clock: no deadline.
  if (timeout >= std::chrono::hours(24 * 365)) {
    changed_.wait(lock, settled);
  } else {
    changed_.wait_until(lock, start + timeout, settled);
  }
  abandoned_ = true;
  if (!answered_) return false;
  // Taken out of the slot: the asker may free the slot later, on its worker, and the exception
  // must die on this thread, which reads it.
  std::exception_ptr error = std::move(error_);
  lock.unlock();
  if (error) std::rethrow_exception(error);
  return true;
}

namespace {

// Spawned for one ask: it sends the request with Reactor::request in on_start and hands the
// outcome to the slot. It holds the slot, which is process memory, and the request's envelope
// until on_start sends it, so it must never be snapshotted; nothing outside this file knows its
// type or asks for that.
class Asker final : public Reactor {
 public:
  Asker(std::shared_ptr<AskSlot> slot, ActorRef to, Envelope* request, std::uint64_t reply_type,
        std::chrono::nanoseconds timeout) noexcept
      : slot_(std::move(slot)), to_(to), request_(request), reply_type_(reply_type),
        timeout_(timeout) {}
  ~Asker() override {
    if (request_ != nullptr) free_envelope(request_);  // stopped before on_start
  }
  void on_start() override {
    Envelope* e = std::exchange(request_, nullptr);
    ReactorAccess::request(*this, to_, e, SendResult::kOk, reply_type_, timeout_, &Asker::answered);
  }
  // A reply sent as a plain message to sender() (see ask_slot.h).
  void on_message(const Message& message) override {
    if (slot_->deliver(message)) stop();
  }
  void on_stop() override { slot_->close(); }

 private:
  static void answered(Reactor& self, const RequestOutcome& outcome) {
    Asker& asker = static_cast<Asker&>(self);
    if (outcome.reply == nullptr || !asker.slot_->deliver(*outcome.reply)) {
      asker.slot_->close(outcome.error == RequestError::kRefused ? outcome.refusal : SendResult::kOk);
    }
    asker.stop();
  }

  std::shared_ptr<AskSlot> slot_;
  ActorRef to_;
  Envelope* request_;
  std::uint64_t reply_type_;
  std::chrono::nanoseconds timeout_;
};

}  // namespace
}  // namespace detail

bool Runtime::ask_erased(ActorRef to, detail::Envelope* request, SendResult encoded, std::uint64_t reply_type,
                         DecodeReply decode, void* reply, std::chrono::nanoseconds timeout, SendResult* sent) {
  HeapScope system(nullptr);
  const auto refuse = [&](SendResult why) {
    if (request != nullptr) detail::free_envelope(request);
    if (sent != nullptr) *sent = why;
    return false;
  };
  try {
    impl_->require_outside_workers("ask");
  } catch (...) {
    refuse(SendResult::kOk);
    throw;
  }
  if (request == nullptr) return refuse(encoded);
  if (!impl_->accepting.load()) return refuse(SendResult::kShuttingDown);
  SpawnOptions options;
  options.name = "ask";
  options.recording = recording_off();
  // On the asked reactor's worker (where it is now; a hint), its answer reaches the asker without a
  // cross-thread wake-up.
  if (detail::Cell* target = impl_->cells.find(to); target != nullptr) {
    options.worker = target->worker.load(std::memory_order_acquire)->index();
  }
  auto slot = std::make_shared<detail::AskSlot>(reply_type, decode, reply);
  ActorRef asker;
  try {
    asker = spawn<detail::Asker>(options, slot, to, request, reply_type, timeout);
  } catch (...) {
    // `reply` lies in the caller's frame: no reply may reach it once this returns.
    slot->abandon();
    // The asker may have been built, and freed the request with it: not freed again here.
    request = nullptr;
    // Shutdown began between the check and the spawn.
    if (!impl_->accepting.load()) return refuse(SendResult::kShuttingDown);
    refuse(SendResult::kOk);
    throw;
  }
  // The asker owns the request now: it sends it in on_start, or frees it if it never starts.
  const bool answered = slot->wait(timeout);
  if (sent != nullptr) *sent = answered ? SendResult::kOk : slot->refusal();
  // An asker that had an outcome stops itself; a stop sent to it as well would end as a dead
  // letter.
  if (!answered) stop(asker);
  return answered;
}

}  // namespace reheap
