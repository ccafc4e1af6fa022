// The fix, checked against the recording of the bug: the crash bundle the shipped `ledger`
// program left is replayed in this test binary, which is linked with the fixed settlement
// (settlement_v2.cpp). Every event before the failure gives the outputs the shipped build gave
// (the fix changes nothing there); the failing settlement passes, and the book after it is sound;
// the replayed ledger then goes on settling in a TestRuntime.
//
// What "passes" means here: a replay compares outputs with the recording up to the failing event
// only, since the recorded hook stopped where it threw and what it would have sent next is not in
// the log. So at that event the test checks the outcome itself, against a model of posting
// (replay_support.h): no failure, the batch posted as the model says, the account that was lost
// is open with its money, every cent accounted for, and the Statement agrees.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <msgpack.hpp>

#include "ledger.h"
#include "protocol.h"
#include "reheap/testing/replay.h"
#include "reheap/testing/test_runtime.h"
#include "replay_support.h"
#include "settlement.h"

namespace ledger::test {
namespace {

using reheap::testing::Replay;

TEST(LedgerFix, TheFixedBuildPassesTheSettlementThatFailed) {
  ASSERT_STREQ(settlement_version(), "v2");
  std::string why;
  const std::optional<CrashBundle> bundle = crash_bundle(&why);
  ASSERT_TRUE(bundle) << why;

  Replay replay = Replay::open(bundle->path);
  ASSERT_EQ(replay.failing_event(), bundle->failing_event);
  // Outputs compared event by event with the shipped build's: a Divergence would throw here.
  replay.run_to(bundle->failing_event - 1);
  const Ledger& ledger = replay.reactor<Ledger>();
  const Book& book = ledger.book();
  const AccountId victim = first_dormant_in_batch(ledger, bundle->failing_now);
  ASSERT_NE(victim, 0u);
  ASSERT_EQ(bundle->failure, "no open account " + std::to_string(victim));
  const std::uint64_t cycles = book.cycles;
  const std::uint64_t posted = book.posted;
  const std::uint64_t bounced = book.bounced;
  const ExpectedBatch expected = expected_batch(book);
  const std::size_t sends_before = replay.sends().size();
  const auto settle_every = std::chrono::duration_cast<std::chrono::nanoseconds>(ledger.config().settle_every);

  ASSERT_NO_THROW(EXPECT_TRUE(replay.step()));
  EXPECT_EQ(replay.position(), bundle->failing_event);
  EXPECT_TRUE(replay.at_end());

  // The book after the settlement that failed: the whole batch is settled as the model says,
  // every account in which money moved is open with its new balance (the one version 1 lost among
  // them: a transfer that moves money is activity), and every cent is accounted for.
  EXPECT_EQ(book.cycles, cycles + 1);
  EXPECT_TRUE(book.pending.empty());
  EXPECT_EQ(book.posted - posted, expected.posted);
  EXPECT_EQ(book.bounced - bounced, expected.bounced);
  for (const AccountId id : expected.moved) {
    ASSERT_TRUE(book.is_open(id)) << id;
    EXPECT_EQ(book.accounts.at(id).balance_cents, expected.balances.at(id)) << id;
    EXPECT_EQ(book.accounts.at(id).last_activity, bundle->failing_now) << id;
  }
  // Only if all its transfers bounced is the account still dormant, and escheated - after the
  // batch, where that is harmless.
  const bool victim_paid = expected.moved.contains(victim);
  EXPECT_EQ(book.is_open(victim), victim_paid);
  EXPECT_EQ(book.last_settled_at, bundle->failing_now);
  EXPECT_NO_THROW(book.audit());

  // What the subscribers were told: a Statement for this cycle, which escheats the account only
  // if no money moved in it.
  std::size_t statements = 0;
  for (std::size_t i = sends_before; i < replay.sends().size(); ++i) {
    const reheap::testing::ReplayedSend& send = replay.sends()[i];
    if (send.type_id != reheap::message_type_id<Statement>()) continue;
    ++statements;
    Statement s;
    msgpack::object_handle handle = msgpack::unpack(send.payload.data(), send.payload.size());
    handle.get().convert(s);
    EXPECT_EQ(s.cycle, cycles + 1);
    EXPECT_EQ(s.posted, expected.posted);
    EXPECT_EQ(std::count(s.escheated.begin(), s.escheated.end(), victim), victim_paid ? 0 : 1);
  }
  EXPECT_GT(statements, 0u);

  // The recording, extended: the fixed ledger settles on in a TestRuntime, on virtual time.
  reheap::testing::TestRuntime rt;
  const reheap::ActorRef bank = replay.continue_in(rt);
  for (int i = 0; i < 10; ++i) rt.advance(settle_every);
  const Ledger& after = rt.reactor<Ledger>(bank);
  EXPECT_EQ(after.book().cycles, cycles + 11);
  EXPECT_NO_THROW(after.book().audit());
}

// The scenario of replay_bug_test.cpp, on the fixed settlement: the payee is paid and stays open.
TEST(LedgerScenario, ATransferToAnAccountGoingDormantInItsCycleIsPostedByTheFixedSettlement) {
  reheap::testing::TestRuntime rt;
  const std::optional<DormantPayee> d = transfer_to_a_payee_going_dormant(rt);
  ASSERT_TRUE(d);
  rt.advance(std::chrono::milliseconds(4));
  const Book& book = rt.reactor<Ledger>(d->bank).book();
  ASSERT_TRUE(book.is_open(d->payee));
  EXPECT_EQ(book.accounts.at(d->payee).balance_cents, 500);
  EXPECT_EQ(book.accounts.at(d->payer).balance_cents, 1'500);
  // Both idle again for the whole dormancy period: both escheated, their 2,000 cents unclaimed.
  rt.advance(std::chrono::milliseconds(100));
  EXPECT_FALSE(book.is_open(d->payee));
  EXPECT_FALSE(book.is_open(d->payer));
  EXPECT_EQ(book.unclaimed_cents, 2'000);
  EXPECT_NO_THROW(book.audit());
}

}  // namespace
}  // namespace ledger::test
