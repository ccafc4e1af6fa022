// Runtime::ask: the asker reactor and the slot its answer waits in (ask_slot.h).
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <utility>

#include "reheap/heap_scope.h"
#include "reheap/runtime.h"
#include "ask_slot.h"
#include "envelope.h"
#include "runtime_impl.h"
#include "worker.h"

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

void AskSlot::close() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
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

// Spawned for one ask: the request goes out under its reference, and the first message of the
// reply type that comes back is the answer. It holds the slot, which is process memory, so it must
// never be snapshotted; nothing outside this file knows its type or asks for that.
class Asker final : public Reactor {
 public:
  explicit Asker(std::shared_ptr<AskSlot> slot) noexcept : slot_(std::move(slot)) {}
  void on_message(const Message& message) override {
    if (slot_->deliver(message)) stop();
  }
  void on_stop() override { slot_->close(); }

 private:
  std::shared_ptr<AskSlot> slot_;
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
    asker = spawn<detail::Asker>(options, slot);
  } catch (...) {
    // Shutdown began between the check and the spawn.
    if (!impl_->accepting.load()) return refuse(SendResult::kShuttingDown);
    refuse(SendResult::kOk);
    throw;
  }
  const SendResult result = detail::send_as(*impl_, asker, to, request, SendResult::kOk);
  if (sent != nullptr) *sent = result;
  // An asker that took an answer (decodable or not) stops itself; a stop sent to it as well would
  // end as a dead letter.
  // `reply` lies in the caller's frame: no reply may reach it after this returns, which wait
  // ensures when it runs, and abandon when it does not.
  if (result != SendResult::kOk) slot->abandon();
  const bool answered = result == SendResult::kOk && slot->wait(timeout);
  if (!answered) stop(asker);
  return answered;
}

}  // namespace reheap
