// The ledger's protocol: the messages tellers and the ledger exchange.
//
// Most are trivially copyable and travel as bytes (the ledger reads a Transfer in place, without
// decoding it: transfers are nearly all of its traffic). OpenAccount carries the owner's name and
// Statement a list of accounts, so those two are msgpack and decode into the receiver's heap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <msgpack.hpp>

namespace ledger {

// Account numbers are eight digits, drawn by the ledger with Reactor::random() (ledger.cpp).
using AccountId = std::uint64_t;

// ---- teller -> ledger --------------------------------------------------------------------------

// Opens an account; the ledger answers AccountOpened to the sender.
struct OpenAccount {
  std::string owner;
  MSGPACK_DEFINE(owner)
};

// Cash paid in: credited at once.
struct Deposit {
  AccountId account;
  std::int64_t cents;
};

// Moves money between two accounts at the next settlement (the ledger queues it). A transfer
// naming an account that is not open is refused at once with Rejected.
struct Transfer {
  AccountId from;
  AccountId to;
  std::int64_t cents;
};

// Asks for a Statement after every settlement.
struct Subscribe {
  std::uint8_t unused;
};

// ---- ledger -> teller --------------------------------------------------------------------------

struct AccountOpened {
  AccountId account;
};

// A Deposit or Transfer named an account that is closed or never existed.
struct Rejected {
  AccountId account;
};

// What one settlement did, sent to every subscriber.
struct Statement {
  std::uint64_t cycle = 0;
  std::uint64_t posted = 0;   // transfers that moved money
  std::uint64_t bounced = 0;  // transfers refused for want of funds
  std::vector<AccountId> escheated;  // dormant accounts closed, their money now unclaimed
  std::int64_t unclaimed_cents = 0;
  MSGPACK_DEFINE(cycle, posted, bounced, escheated, unclaimed_cents)
};

}  // namespace ledger
