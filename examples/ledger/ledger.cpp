// Ledger (see ledger.h).
#include "ledger.h"

#include <utility>

#include "settlement.h"

namespace ledger {
namespace {

// Eight-digit account numbers: few enough that a person can read them, many enough (90 million)
// that a draw rarely meets one in use.
constexpr AccountId kFirstAccountNumber = 10'000'000;
constexpr AccountId kAccountNumbers = 90'000'000;

}  // namespace

Ledger::Ledger(const LedgerConfig& config) : config_(config) {
  handle<&Ledger::on_open>();
  handle<&Ledger::on_deposit>();
  handle<&Ledger::on_transfer>();
  handle<&Ledger::on_subscribe>();
}

void Ledger::on_start() {
  book_.last_settled_at = now();
  start_timer(config_.settle_every, config_.settle_every);
}

void Ledger::on_timer(reheap::TimerId) {
  const Statement statement = settle(book_, now(), config_.dormant_after);
  for (const reheap::ActorRef subscriber : subscribers_) send(subscriber, statement);
}

void Ledger::on_open(const OpenAccount& m) {
  AccountId id = 0;
  do {
    id = kFirstAccountNumber + random() % kAccountNumbers;
  } while (!book_.is_free(id));
  book_.open(id, m.owner, now());
  send(sender(), AccountOpened{id});
}

void Ledger::on_deposit(const Deposit& m) {
  if (!book_.is_open(m.account)) {
    send(sender(), Rejected{m.account});
    return;
  }
  book_.deposit(m.account, m.cents, now());
}

void Ledger::on_transfer(const Transfer& m) {
  for (const AccountId id : {m.from, m.to}) {
    if (!book_.is_open(id)) {
      send(sender(), Rejected{id});
      return;
    }
  }
  book_.pending.push_back(PendingTransfer{next_transfer_++, m.from, m.to, m.cents});
}

void Ledger::on_subscribe(const Subscribe&) { subscribers_.push_back(sender()); }

}  // namespace ledger
