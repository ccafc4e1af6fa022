// Book (see book.h).
#include "book.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace ledger {

Account& Book::open_account(AccountId id) {
  const auto it = accounts.find(id);
  if (it == accounts.end()) throw std::out_of_range("no open account " + std::to_string(id));
  return it->second;
}

void Book::open(AccountId id, std::string owner, Clock::time_point now) {
  Account& a = accounts[id];
  a.owner = std::move(owner);
  a.last_activity = now;
}

void Book::deposit(AccountId id, std::int64_t cents, Clock::time_point now) {
  Account& a = open_account(id);
  a.balance_cents += cents;
  a.last_activity = now;
  deposited_cents += cents;
}

bool Book::post(const PendingTransfer& t, Clock::time_point now) {
  Account& from = open_account(t.from);
  Account& to = open_account(t.to);
  if (from.balance_cents < t.cents) {
    ++bounced;
    return false;
  }
  from.balance_cents -= t.cents;
  to.balance_cents += t.cents;
  from.last_activity = now;
  to.last_activity = now;
  ++posted;
  return true;
}

std::vector<AccountId> Book::escheat_dormant(Clock::time_point now, Clock::duration dormant_after) {
  std::vector<AccountId> gone;
  for (auto it = accounts.begin(); it != accounts.end();) {
    if (now - it->second.last_activity < dormant_after) {
      ++it;
      continue;
    }
    unclaimed_cents += it->second.balance_cents;
    closed.insert(it->first);
    gone.push_back(it->first);
    it = accounts.erase(it);
  }
  return gone;
}

void Book::audit() const {
  std::int64_t held = unclaimed_cents;
  for (const auto& [id, account] : accounts) held += account.balance_cents;
  if (held != deposited_cents) {
    throw std::logic_error("audit: the accounts hold " + std::to_string(held) + " cents, " +
                           std::to_string(deposited_cents) + " were deposited");
  }
}

}  // namespace ledger
