// Teller: the load - a reactor standing for a branch full of customers, who open accounts, pay
// cash in and move money around, all through the ledger.
//
// Use is skewed, as in a real bank: a teller picks its accounts with a truncated exponential
// distribution over the order in which they were opened, so with the defaults the first is used
// about 400 times a second and the last one about once every seven seconds. Those rarely used accounts are
// the ones that go dormant and are escheated (book.h); the teller forgets them when a Statement or
// a Rejected says so and opens a new account in their place, at the cold end of its list. Over a
// long run every account drifts from cold to hot, and many pass through the range where they are
// used about once per dormancy period: where the ledger's settlement bug waits (settlement_v1.cpp).
//
// A teller reads randomness only through Reactor::random() and is deterministic as the ledger is;
// it is not recorded in the example because it is the outside world of the service.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "protocol.h"
#include "reheap/reactor.h"

namespace ledger {

struct TellerConfig {
  std::uint32_t customers = 1000;        // accounts kept open
  std::uint32_t transfers_per_tick = 25;
  std::chrono::nanoseconds tick = std::chrono::milliseconds(1);
  // How steeply use falls along the list: account i is picked with weight exp(-skew * i / n).
  std::uint32_t skew = 8;
};

class Teller final : public reheap::Reactor {
 public:
  Teller(reheap::ActorRef ledger, const TellerConfig& config);

  void on_start() override;
  void on_timer(reheap::TimerId) override;

 private:
  void on_opened(const AccountOpened& m);
  void on_rejected(const Rejected& m);
  void on_statement(const Statement& m);

  void open_one();
  // Forgets `account` if it is one of ours, and opens another in its place.
  void replace(AccountId account);
  std::size_t pick();           // an index into accounts_, skewed towards the front
  double uniform();             // in [0, 1), from Reactor::random()

  reheap::ActorRef ledger_;
  TellerConfig config_;
  std::vector<AccountId> accounts_;  // in the order opened: the front is the busiest
  std::uint64_t opened_ = 0;
};

}  // namespace ledger
