// Settlement as shipped (version 1). The bug lives here.
//
// It tidies the book first - escheats the dormant accounts - and posts the cycle's transfers
// after. Transfers were accepted during the cycle only if both accounts were open, so posting
// assumes they still are. That holds for every account but one kind: an account idle for almost
// `dormant_after` that receives (or sends) a transfer in the very cycle at whose end it becomes
// dormant. Its last_activity still says "idle" when the escheat runs, because a queued transfer is
// not activity until it is posted; the account is closed, and posting its transfer throws
// std::out_of_range("no open account N") out of Ledger::on_timer.
//
// It takes an account whose use is rare and irregular and a transfer landing in a window one
// settlement period wide, so in the demo it fires after hundreds of thousands of transfers and
// hundreds of clean settlements, at a moment no one could arrange by hand.
#include "settlement.h"

namespace ledger {

Statement settle(Book& book, Clock::time_point now, Clock::duration dormant_after) {
  Statement s;
  s.cycle = ++book.cycles;
  s.escheated = book.escheat_dormant(now, dormant_after);
  for (const PendingTransfer& t : book.pending) {
    if (book.post(t, now)) {
      ++s.posted;
    } else {
      ++s.bounced;
    }
  }
  book.pending.clear();
  book.last_settled_at = now;
  book.audit();
  s.unclaimed_cents = book.unclaimed_cents;
  return s;
}

const char* settlement_version() noexcept { return "v1"; }

}  // namespace ledger
