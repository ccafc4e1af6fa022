// Ledger: the service - a reactor that keeps accounts, takes deposits and transfers from tellers,
// and settles the transfers in batches on a periodic timer.
//
// Everything it knows is in its Book (book.h), in its own heap. It reads the time only through
// Reactor::now() and draws account numbers with Reactor::random(), so a recording of it holds
// every input it had and a replay gives it the same answers (runtime/DETERMINISM.md).
//
// Protocol (protocol.h): OpenAccount -> AccountOpened; Deposit (credited at once); Transfer
// (queued for the next settlement); both answered with Rejected when an account is not open;
// Subscribe -> a Statement after every settlement.
#pragma once

#include <chrono>
#include <vector>

#include "book.h"
#include "protocol.h"
#include "reheap/reactor.h"

namespace ledger {

struct LedgerConfig {
  Clock::duration settle_every = std::chrono::milliseconds(5);
  Clock::duration dormant_after = std::chrono::seconds(3);
};

class Ledger final : public reheap::Reactor {
 public:
  explicit Ledger(const LedgerConfig& config);

  void on_start() override;
  void on_timer(reheap::TimerId) override;

  // For tests and replays, between events.
  const Book& book() const noexcept { return book_; }
  const LedgerConfig& config() const noexcept { return config_; }

 private:
  void on_open(const OpenAccount& m);
  void on_deposit(const Deposit& m);
  void on_transfer(const Transfer& m);
  void on_subscribe(const Subscribe& m);

  LedgerConfig config_;
  Book book_;
  std::vector<reheap::ActorRef> subscribers_;
  std::uint64_t next_transfer_ = 1;
};

}  // namespace ledger
