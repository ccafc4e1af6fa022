// Settlement, fixed (version 2).
//
// Version 1 escheated dormant accounts before posting the cycle's transfers, so an account that
// became dormant at the end of the very cycle in which a transfer named it was closed under that
// transfer, and posting it threw (settlement_v1.cpp). The fix is the order: post first, then
// escheat. A transfer that moves money is activity, so its accounts are no longer dormant when the
// escheat looks at them; a bounced one moves nothing and its accounts may be escheated, which is
// safe because the batch is done with them.
//
// Only the order changed: no field of the Book did, so the fixed build replays the recordings of
// version 1 (settlement.h).
#include "settlement.h"

namespace ledger {

Statement settle(Book& book, Clock::time_point now, Clock::duration dormant_after) {
  Statement s;
  s.cycle = ++book.cycles;
  for (const PendingTransfer& t : book.pending) {
    if (book.post(t, now)) {
      ++s.posted;
    } else {
      ++s.bounced;
    }
  }
  book.pending.clear();
  s.escheated = book.escheat_dormant(now, dormant_after);
  book.last_settled_at = now;
  book.audit();
  s.unclaimed_cents = book.unclaimed_cents;
  return s;
}

const char* settlement_version() noexcept { return "v2"; }

}  // namespace ledger
