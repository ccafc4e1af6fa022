// Settlement: what the ledger does at the end of every cycle (its periodic timer).
//
// Transfers are accepted during a cycle and settled together at its end, as a clearing house
// settles a day's payments in one batch: each is posted (or bounces for want of funds), dormant
// accounts are escheated, the book is audited, and the outcome goes to subscribers as a Statement.
//
// There are two builds of this function, with the same signature and the same Book:
//   settlement_v1.cpp  as shipped in the `ledger` program. It has the bug this example is about.
//   settlement_v2.cpp  the fix, linked into `ledger_fixed` and the fixed replay test.
// Everything else in the example is shared, so the two builds' heaps have the same layout and a
// recording of one replays in the other (relocation maps code, not data: a fix may change what
// the code does, not the shape of the state).
#pragma once

#include "book.h"
#include "protocol.h"

namespace ledger {

// Settles the cycle ending at `now`. Throws what the book throws; the ledger does not catch it.
Statement settle(Book& book, Clock::time_point now, Clock::duration dormant_after);

// "v1" or "v2": which build this program linked, for what the programs print.
const char* settlement_version() noexcept;

}  // namespace ledger
