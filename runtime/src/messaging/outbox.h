// Outbox: the messages a worker's running event has sent and not yet pushed, one destination at
// a time.
//
// A reactor that sends many messages to one mailbox in an event (a stream, a fan-in) would pay a
// shared-line exchange, a look at the receiver's `scheduled` flag and possibly a wake-up per
// message, on a line the receiver's worker and other senders write too. The outbox links such
// sends locally and pushes them with one exchange (Mailbox::push of a chain), schedules the
// receiver once, and so contends once per chain instead of once per message.
//
// Order: the outbox holds one destination's chain at a time. Every other push from this thread
// (another destination, a bounded mailbox, a system message, a send from outside any reactor)
// flushes it first, and the worker flushes it after every event (Worker::deliver), so this
// thread's pushes reach the mailboxes in the order its sends were made, and nothing is held past
// the event that sent it: per-sender FIFO, moves and the stop/teardown order are as without it.
//
// What changes: a send is in the receiver's mailbox by the end of the event that made it (or
// when its chain fills), not at once. A side channel a hook signals after sending (an atomic, a
// condition variable) may therefore be seen before the messages are; messages are the way to
// say "after these".
//
// Only unbounded mailboxes are batched: a bounded one counts and may refuse each send
// (send.cpp), so its envelopes go straight in.
#pragma once

#include <cstdint>

#include "messaging/envelope.h"

namespace reheap::detail {

struct Cell;

// Pushes `first`..`last` (`n` envelopes linked through `next`) onto `target`'s mailbox and
// schedules it if it was idle (send.cpp). Any thread.
void post(Cell* target, Envelope* first, Envelope* last, std::uint32_t n) noexcept;

class Outbox {
 public:
  // Envelopes in one chain at most: a long stream still reaches its receiver while the sending
  // event runs, in pieces large enough that the exchange is paid rarely.
  static constexpr std::uint32_t kChain = 64;

  // Worker thread: `e` goes to `target` (unbounded) after the envelopes sent before it.
  void add(Cell* target, Envelope* e) noexcept {
    if (target != target_) [[unlikely]] {
      flush();
      target_ = target;
      first_ = e;
    } else {
      last_->next = e;
    }
    last_ = e;
    if (++count_ == kChain) [[unlikely]] publish();
  }

  // Worker thread: pushes what is held.
  void flush() noexcept {
    if (count_ != 0) publish();
  }

  // Worker thread: the cell the latest chains went to, and how many envelopes went there in a
  // row, since forget_fed(). The worker asks after each cell run whether it fed a consumer on its
  // own worker enough to let that consumer catch up at once (Worker::catch_up).
  Cell* fed() const noexcept { return fed_; }
  std::uint32_t fed_count() const noexcept { return fed_count_; }
  void forget_fed() noexcept {
    fed_ = nullptr;
    fed_count_ = 0;
  }

 private:
  [[gnu::noinline]] void publish() noexcept {
    post(target_, first_, last_, count_);
    if (target_ == fed_) {
      fed_count_ += count_;
    } else {
      fed_ = target_;
      fed_count_ = count_;
    }
    target_ = nullptr;
    count_ = 0;
  }

  Cell* target_ = nullptr;  // null while empty
  Envelope* first_ = nullptr;
  Envelope* last_ = nullptr;
  std::uint32_t count_ = 0;
  Cell* fed_ = nullptr;
  std::uint32_t fed_count_ = 0;
};

}  // namespace reheap::detail
