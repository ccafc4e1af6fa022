// What the ledger's replay tests share: a crash bundle of the shipped ledger, and what the book
// said just before the settlement that failed.
//
// The bundle comes from the `ledger` program itself - another binary than the test, as in real
// life - run once per test binary into a temporary directory (or from the directory named by the
// environment variable LEDGER_BUNDLE, for a bundle made elsewhere, e.g. by tools/demo.sh).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "book.h"
#include "ledger.h"

namespace ledger::test {

struct CrashBundle {
  std::filesystem::path path;
  std::uint64_t failing_event = 0;  // its index in the recording
  std::string hook;                 // as recorded
  std::string failure;              // what() as recorded
  Clock::time_point failing_now{};  // Reactor::now() during the failing event, from the log
};

// The bundle, made on the first call; nullopt with `why` set if there is none.
std::optional<CrashBundle> crash_bundle(std::string* why);

// The account whose absence the failing settlement of version 1 trips over, predicted from the
// book just before it: the first account named by a pending transfer (payer first, as
// Book::post looks them up) that is dormant at `now`. 0 if none is.
AccountId first_dormant_in_batch(const Ledger& ledger, Clock::time_point now);

// What posting the pending batch must do when every account in it is still open (the fixed
// settlement posts before it escheats): a model of Book::post, independent of the ledger's code,
// for the test to compare the fixed build's book with.
struct ExpectedBatch {
  std::map<AccountId, std::int64_t> balances;  // of every account the batch names, after it
  std::set<AccountId> moved;                   // accounts in which money moved
  std::uint64_t posted = 0;
  std::uint64_t bounced = 0;
};
ExpectedBatch expected_batch(const Book& book);

}  // namespace ledger::test
