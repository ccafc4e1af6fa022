// Teller (see teller.h).
#include "teller.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace ledger {

Teller::Teller(reheap::ActorRef ledger, const TellerConfig& config) : ledger_(ledger), config_(config) {
  handle<&Teller::on_opened>();
  handle<&Teller::on_rejected>();
  handle<&Teller::on_statement>();
}

void Teller::on_start() {
  send(ledger_, Subscribe{0});
  for (std::uint32_t i = 0; i < config_.customers; ++i) open_one();
  start_timer(config_.tick, config_.tick);
}

void Teller::open_one() {
  ++opened_;
  send(ledger_, OpenAccount{"customer " + std::to_string(opened_)});
}

void Teller::on_opened(const AccountOpened& m) {
  accounts_.push_back(m.account);
  send(ledger_, Deposit{m.account, static_cast<std::int64_t>(10'000 + random() % 90'000)});
}

void Teller::on_rejected(const Rejected& m) { replace(m.account); }

void Teller::on_statement(const Statement& m) {
  for (const AccountId account : m.escheated) replace(account);
}

void Teller::replace(AccountId account) {
  const auto it = std::find(accounts_.begin(), accounts_.end(), account);
  if (it == accounts_.end()) return;  // another teller's, or already replaced
  accounts_.erase(it);
  open_one();
}

double Teller::uniform() { return static_cast<double>(random() >> 11) * 0x1.0p-53; }

std::size_t Teller::pick() {
  // Inverse transform of exp(-skew * x) truncated to [0, 1), scaled to the list.
  const double k = config_.skew;
  const double x = -std::log1p(-uniform() * (1.0 - std::exp(-k))) / k;
  return std::min(accounts_.size() - 1, static_cast<std::size_t>(x * static_cast<double>(accounts_.size())));
}

void Teller::on_timer(reheap::TimerId) {
  if (accounts_.size() < 2) return;
  for (std::uint32_t i = 0; i < config_.transfers_per_tick; ++i) {
    const AccountId from = accounts_[pick()];
    const AccountId to = accounts_[pick()];
    if (from == to) continue;
    send(ledger_, Transfer{from, to, static_cast<std::int64_t>(1 + random() % 5'000)});
  }
  // Cash keeps coming in, so that transfers bounce only now and then.
  send(ledger_, Deposit{accounts_[pick()], static_cast<std::int64_t>(1 + random() % 20'000)});
}

}  // namespace ledger
