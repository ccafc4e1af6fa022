// Asking a reactor from outside the runtime (Runtime::ask): where the answer waits.
//
// A thread that is not a worker (main, a test, an admin command) has a temporary reactor, the
// asker, send the request with Reactor::request (request.h: one correlation mechanism for both),
// and blocks until the request's outcome reaches the asker. The asked reactor answers with
// reply(); a plain send of the reply type to sender() answers too, for repliers written before
// request/reply (the asker has only the one request, so nothing is ambiguous). The slot is
// what the blocked thread and the asker share: the asker decodes the reply into it on its worker
// and wakes the thread.
//
// The slot lives in process memory, never in a heap, and the reply is decoded with no heap
// current, so that neither depends on the asker's heap, which goes with the asker. Both sides hold
// the slot through a shared_ptr: a reply that comes after the thread gave up finds the slot
// abandoned and is dropped, and whichever side lets go last frees it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <utility>

#include "reheap/message.h"

namespace reheap::detail {

class AskSlot {
 public:
  explicit AskSlot(std::uint64_t reply_type) noexcept : reply_type_(reply_type) {}
  std::uint64_t reply_type() const noexcept { return reply_type_; }
  virtual ~AskSlot() = default;
  AskSlot(const AskSlot&) = delete;
  AskSlot& operator=(const AskSlot&) = delete;

  // On the asker's worker. A message of the reply type, while the thread still waits, is decoded
  // (a MessageError or bad_alloc is kept for the thread) and wakes it: true. Anything else: false.
  bool deliver(const Message& message);
  // On the asker's worker: the asker stops without an answer (shutdown, the thread gave up, a
  // timeout), or its request was refused (`refusal`: why).
  void close(SendResult refusal = SendResult::kOk) noexcept;
  // After wait() returned false: why the request was not delivered, kOk if it was.
  SendResult refusal() const noexcept { return refusal_.load(std::memory_order_acquire); }
  // On the asking thread: waits until an answer came (true; a decode error is rethrown), the
  // asker closed or `timeout` passed (false). The slot is abandoned when this returns.
  bool wait(std::chrono::nanoseconds timeout);

 protected:
  virtual void decode(const Message& message) = 0;

 private:
  const std::uint64_t reply_type_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool answered_ = false;
  bool closed_ = false;
  bool abandoned_ = false;
  std::exception_ptr error_;
  std::atomic<SendResult> refusal_{SendResult::kOk};
  std::atomic<bool> settled_{false};  // answered_ || closed_, read without the lock while spinning
  static constexpr long kSpin = 100'000;  // ns the asking thread spins before it sleeps
};

template <class Reply>
class TypedAskSlot final : public AskSlot {
 public:
  TypedAskSlot() noexcept : AskSlot(message_type_id<Reply>()) {}
  // After wait() returned true.
  Reply take() { return std::move(*reply_); }

 private:
  void decode(const Message& message) override { reply_.emplace(message.get<Reply>()); }
  std::optional<Reply> reply_;
};

}  // namespace reheap::detail
