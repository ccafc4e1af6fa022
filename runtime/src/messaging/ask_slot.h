// Asking a reactor from outside the runtime (Runtime::ask): where the answer waits. Internal to
// the runtime (ask.cpp); Runtime::ask reaches it through ask_erased.
//
// A thread that is not a worker (main, a test, an admin command) has a temporary reactor, the
// asker, send the request with Reactor::request (request.h: one correlation mechanism for both),
// and blocks until the request's outcome reaches the asker. The asked reactor answers with
// reply(); a plain send of the reply type to sender() answers too, for repliers that answer any
// message that way (the asker has only the one request, so nothing is ambiguous). The slot is
// what the blocked thread and the asker share: the asker decodes the reply into it on its worker
// and wakes the thread.
//
// The slot lives in process memory, never in a heap, and the reply is decoded with no heap
// current, so that neither depends on the asker's heap, which goes with the asker. The reply is
// decoded by the asking template's `decode` into its own frame (a std::optional<Reply>), under the
// slot's lock and only while the thread still waits: once it stops waiting (wait returned, or
// abandon) the frame may be gone, and a late reply is dropped. Both sides hold the slot through a
// shared_ptr, and whichever side lets go last frees it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>

#include "reheap/message.h"

namespace reheap::detail {

class AskSlot {
 public:
  using Decode = void (*)(const Message& message, void* reply);
  AskSlot(std::uint64_t reply_type, Decode decode, void* reply) noexcept
      : reply_type_(reply_type), decode_(decode), reply_(reply) {}
  AskSlot(const AskSlot&) = delete;
  AskSlot& operator=(const AskSlot&) = delete;

  std::uint64_t reply_type() const noexcept { return reply_type_; }
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
  // On the asking thread, when it does not wait: no reply reaches its frame from now on.
  void abandon() noexcept;

 private:
  const std::uint64_t reply_type_;
  const Decode decode_;
  void* const reply_;
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

}  // namespace reheap::detail
