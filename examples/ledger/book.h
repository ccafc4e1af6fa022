// Book: the ledger's state - its accounts, the transfers waiting for the next settlement, and the
// totals with which it audits itself.
//
// The Book is a member of the Ledger reactor, so all of it (the map's nodes, the owners' names,
// the queue) lives in the ledger's heap: a snapshot of the heap is a snapshot of the book, and a
// replay rebuilds it allocation by allocation.
//
// Money never appears or vanishes: every cent deposited is in an open account's balance or, once
// its account was escheated, in `unclaimed_cents`. audit() checks exactly that.
//
// Escheatment: an account in which no money moved for `dormant_after` is closed and its balance
// is handed to the unclaimed-funds pool, as banks must do with abandoned accounts. A closed
// account's number is never given out again.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "protocol.h"

namespace ledger {

using Clock = std::chrono::system_clock;

struct Account {
  std::string owner;
  std::int64_t balance_cents = 0;
  Clock::time_point last_activity{};  // the last time money moved in or out (Reactor::now())
};

// A transfer accepted by the ledger and not yet settled.
struct PendingTransfer {
  std::uint64_t id = 0;
  AccountId from = 0;
  AccountId to = 0;
  std::int64_t cents = 0;
};

struct Book {
  // The open account `id`. Throws std::out_of_range("no open account <id>").
  Account& open_account(AccountId id);
  bool is_open(AccountId id) const { return accounts.contains(id); }
  // True if `id` was never used, open or closed.
  bool is_free(AccountId id) const { return !accounts.contains(id) && !closed.contains(id); }

  void open(AccountId id, std::string owner, Clock::time_point now);
  void deposit(AccountId id, std::int64_t cents, Clock::time_point now);
  // Moves the money of `t`, or returns false (a bounce) if the payer lacks the funds.
  bool post(const PendingTransfer& t, Clock::time_point now);
  // Closes every account idle since `now - dormant_after`, moves its balance to the unclaimed
  // pool, and returns the numbers of the accounts closed, in increasing order.
  std::vector<AccountId> escheat_dormant(Clock::time_point now, Clock::duration dormant_after);
  // Throws std::logic_error if the balances and the pool do not add up to the deposits.
  void audit() const;

  std::map<AccountId, Account> accounts;  // open accounts; a map so that iteration is ordered
  std::set<AccountId> closed;
  std::vector<PendingTransfer> pending;   // in the order accepted
  std::int64_t deposited_cents = 0;
  std::int64_t unclaimed_cents = 0;
  std::uint64_t cycles = 0;               // settlements done
  Clock::time_point last_settled_at{};
  std::uint64_t posted = 0;
  std::uint64_t bounced = 0;
};

}  // namespace ledger
