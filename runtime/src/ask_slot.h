// Asking a reactor from outside the runtime (Runtime::ask): where the answer waits. Internal to
// the runtime (ask.cpp); Runtime::ask reaches it through ask_erased.
//
// A thread that is not a worker (main, a test, an admin command) sends a request from a temporary
// reactor, the asker, and blocks until a reply of the expected type reaches the asker. The asked
// reactor answers as it answers any reactor: to sender(), in the handler or later. The slot is
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

  // On the asker's worker. A message of the reply type, while the thread still waits, is decoded
  // (a MessageError or bad_alloc is kept for the thread) and wakes it: true. Anything else: false.
  bool deliver(const Message& message);
  // On the asker's worker: the asker stops without an answer (shutdown, or the thread gave up).
  void close() noexcept;
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
  std::atomic<bool> settled_{false};  // answered_ || closed_, read without the lock while spinning
  static constexpr long kSpin = 100'000;  // ns the asking thread spins before it sleeps
};

}  // namespace reheap::detail
