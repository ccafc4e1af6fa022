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
#include "reheap/testing/test_runtime.h"
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

// The scenario the replay exposed, set up on a TestRuntime: a payee idle for almost the dormancy
// period (100 ms; settlements every 5 ms) gets a transfer in the last cycle before it becomes
// dormant. Returns the ledger, the payer and the payee, with the clock at 96 ms and the transfer
// queued: the test's next advance(4 ms) runs the settlement that decides. Null when opening the
// accounts failed (a test failure is recorded).
struct DormantPayee {
  reheap::ActorRef bank;
  AccountId payer = 0;
  AccountId payee = 0;
};
std::optional<DormantPayee> transfer_to_a_payee_going_dormant(reheap::testing::TestRuntime& rt);

}  // namespace ledger::test
