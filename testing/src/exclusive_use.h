// ExclusiveUse: a TestRuntime or a Replay runs its reactors on the calling thread, in containers
// no lock guards, so two threads inside one at once would race on all of it. Each operation that
// runs or changes anything enters a Scope; a second thread entering while the first is inside
// gets a std::logic_error naming both operations, before it touches anything. One thread may
// enter again (a run_until predicate that sends), and a later thread may take over once the
// first is out: only use at the same time is refused.
#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>

namespace reheap::testing::detail {

class ExclusiveUse {
 public:
  class Scope {
   public:
    // `what`: the operation, as a user calls it ("TestRuntime::send").
    Scope(ExclusiveUse& use, const char* what) : use_(use) {
      const std::thread::id me = std::this_thread::get_id();
      std::thread::id expected{};
      if (!use_.owner_.compare_exchange_strong(expected, me, std::memory_order_acquire) && expected != me) {
        const char* inside = use_.entered_by_.load(std::memory_order_relaxed);
        throw std::logic_error(std::string("reheap::testing::") + what +
                               ": called while another thread is inside reheap::testing::" +
                               (inside != nullptr ? inside : "it") +
                               "; it runs its reactors on the calling thread and is not thread-safe: use it "
                               "from one thread at a time");
      }
      if (use_.depth_++ == 0) use_.entered_by_.store(what, std::memory_order_relaxed);
    }
    ~Scope() {
      if (--use_.depth_ == 0) use_.owner_.store(std::thread::id{}, std::memory_order_release);
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    ExclusiveUse& use_;
  };

 private:
  std::atomic<std::thread::id> owner_{};
  std::atomic<const char*> entered_by_{nullptr};  // read by a refused thread for its message
  std::uint32_t depth_ = 0;                       // the owner's alone
};

}  // namespace reheap::testing::detail
