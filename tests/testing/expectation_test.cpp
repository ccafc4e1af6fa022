// TestRuntime's checks: expect(pattern) states the next message of a mailbox and delivers it,
// expect_none(pattern, span) states that no such message comes while virtual time passes; what a
// failure says (type names, decoded payloads, what arrived instead); and the orders they keep.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include "reheap/testing/test_runtime.h"

// The types live in a named namespace (no anonymous one), so that failure messages name them
// as a reader would.
namespace expectation_test {

using namespace std::chrono_literals;
using reheap::ActorRef;
using reheap::Reactor;
using reheap::testing::CheckResult;
using reheap::testing::message;
using reheap::testing::Probe;
using reheap::testing::TestRuntime;
using reheap::testing::VirtualClock;

struct Deposit {
  std::string who;
  int amount = 0;
  MSGPACK_DEFINE(who, amount)
};

struct Receipt {
  std::string who;
  int balance = 0;
  MSGPACK_DEFINE(who, balance)
  bool operator==(const Receipt&) const = default;
};

struct Tick {
  int n;
  bool operator==(const Tick&) const = default;
};

// Keeps one balance and answers every deposit with a receipt to `client`.
class Bank : public Reactor {
 public:
  explicit Bank(ActorRef client) : client_(client) { handle<&Bank::on_deposit>(); }
  void on_deposit(const Deposit& d) {
    balance_ += d.amount;
    send(client_, Receipt{d.who, balance_});
  }

 private:
  ActorRef client_;
  int balance_ = 0;
};

// Sends Tick{1} to `target` 100 ms after it starts.
class Reminder : public Reactor {
 public:
  explicit Reminder(ActorRef target) : target_(target) {}
  void on_start() override { start_timer(100ms); }
  void on_timer(reheap::TimerId) override { send(target_, Tick{1}); }

 private:
  ActorRef target_;
};

// Sends Tick{0} to `target` from on_start.
class Greeter : public Reactor {
 public:
  explicit Greeter(ActorRef target) : target_(target) {}
  void on_start() override { send(target_, Tick{0}); }

 private:
  ActorRef target_;
};

TEST(Expect, MatchesByTypeSenderReceiverAndPredicateAndDeliversTheMessage) {
  TestRuntime rt;
  const ActorRef client = rt.spawn<Probe>();
  const ActorRef bank = rt.spawn<Bank>(client);
  rt.send(bank, Deposit{"alice", 500});

  EXPECT_TRUE(rt.expect(message<Deposit>().from(ActorRef()).to(bank)));  // the null sender: the test
  const CheckResult<Receipt> receipt = rt.expect(
      message<Receipt>().from(bank).to(client).with([](const Receipt& r) { return r.balance == 500; }, "a balance of 500"));
  ASSERT_TRUE(receipt) << receipt.text();
  EXPECT_EQ(receipt->who, "alice");  // the matched value, decoded
  EXPECT_EQ(receipt.sender(), bank);
  EXPECT_EQ(receipt.receiver(), client);
  EXPECT_EQ(rt.reactor<Probe>(client).count<Receipt>(), 1u);  // delivered, as step() would
  EXPECT_EQ(rt.pending(), 0u);

  rt.send(bank, Deposit{"alice", 1});
  EXPECT_TRUE(rt.expect(message<Receipt>().to(client).with(Receipt{"alice", 501})));  // runs the Deposit first
  rt.send(bank, Deposit{"bob", 2});
  EXPECT_TRUE(rt.expect(message().to(bank)));  // any type
}

TEST(Expect, AFailureNamesTheTypesAndPrintsThePayloadDecodedAndLeavesTheMessagePending) {
  TestRuntime rt;
  const ActorRef client = rt.spawn<Probe>();
  const ActorRef bank = rt.spawn<Bank>(client);
  rt.send(bank, Deposit{"alice", 500});

  const CheckResult<Receipt> wrong_type = rt.expect(message<Receipt>().to(bank));
  EXPECT_FALSE(wrong_type);
  const std::string text = wrong_type.text();
  EXPECT_NE(text.find("expected expectation_test::Receipt to reactor " +
                      std::to_string(bank.value()) + " (expectation_test::Bank)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("the next one is expectation_test::Deposit [\"alice\",500] from the "
                      "test to reactor " +
                      std::to_string(bank.value())),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(": its type is not expectation_test::Receipt"), std::string::npos) << text;
  EXPECT_EQ(rt.pending(), 1u);  // still there, for the next check
  EXPECT_THROW(static_cast<void>(wrong_type.value()), std::logic_error);

  const CheckResult<Deposit> wrong_value =
      rt.expect(message<Deposit>().to(bank).with([](const Deposit& d) { return d.amount > 1000; }, "an amount over 1000"));
  EXPECT_FALSE(wrong_value);
  EXPECT_NE(wrong_value.text().find(": not satisfying an amount over 1000"), std::string::npos) << wrong_value.text();
  EXPECT_EQ(rt.pending(), 1u);
  EXPECT_TRUE(rt.expect(message<Deposit>().to(bank)));
}

TEST(Expect, NoSuchMessageListsWhatArrivedInstead) {
  TestRuntime rt;
  const ActorRef client = rt.spawn<Probe>();
  reheap::SpawnOptions named;
  named.name = "elsewhere";
  const ActorRef elsewhere = rt.spawn<Probe>(named);
  const ActorRef bank = rt.spawn<Bank>(client);
  rt.send(bank, Deposit{"alice", 500});

  const CheckResult<Receipt> r = rt.expect(message<Receipt>().to(elsewhere));
  EXPECT_FALSE(r);
  EXPECT_NE(r.text().find("(reheap::testing::Probe \"elsewhere\")"), std::string::npos) << r.text();
  EXPECT_NE(r.text().find("no such message; these 2 arrived instead:\n"
                          "  expectation_test::Deposit [\"alice\",500] from the test to reactor " +
                          std::to_string(bank.value()) + " (expectation_test::Bank) at +0 ns\n"
                          "  expectation_test::Receipt [\"alice\",500] from reactor " +
                          std::to_string(bank.value())),
            std::string::npos)
      << r.text();
  EXPECT_EQ(rt.pending(), 0u);  // what it ran to look for one stays run

  const CheckResult<> nothing = rt.expect(message().to(elsewhere));
  EXPECT_NE(nothing.text().find("no such message; nothing arrived instead"), std::string::npos) << nothing.text();
}

TEST(Expect, RawPayloadsArePrintedInHex) {
  TestRuntime rt;
  const ActorRef probe = rt.spawn<Probe>();
  rt.send(probe, Tick{0x01020304});
  const CheckResult<Tick> r = rt.expect(message<Tick>().to(probe).with(Tick{7}));
  EXPECT_FALSE(r);
  EXPECT_NE(r.text().find("equal to raw bytes 07000000"), std::string::npos) << r.text();
  EXPECT_NE(r.text().find("Tick raw bytes 04030201 from the test"), std::string::npos) << r.text();
}

TEST(Expect, ConvertsToAnAssertionResultThatCarriesItsText) {
  TestRuntime rt;
  const ActorRef probe = rt.spawn<Probe>();
  const ::testing::AssertionResult missing = rt.expect(message<Tick>().to(probe));
  EXPECT_FALSE(missing);
  EXPECT_NE(std::string(missing.message()).find("no such message"), std::string::npos) << missing.message();
  EXPECT_NONFATAL_FAILURE(EXPECT_TRUE(rt.expect(message<Tick>().to(probe))),
                          "expected expectation_test::Tick to reactor");
}

// The reminder's timer is due at +100 ms: checks with a span fire it in virtual time, checks
// without one never move the clock.
TEST(ExpectNone, PassesWhenTheMessageComesLaterThanTheSpanAndFailsWhenItComesWithin) {
  {
    TestRuntime rt;
    const ActorRef probe = rt.spawn<Probe>();
    rt.spawn<Reminder>(probe);
    const CheckResult<> quiet = rt.expect_none(message<Tick>().to(probe), 50ms);
    EXPECT_TRUE(quiet) << quiet.text();
    EXPECT_EQ(rt.steady_now(), VirtualClock::kSteadyEpoch + 50ms);
    EXPECT_EQ(rt.reactor<Probe>(probe).count(), 0u);
  }
  {
    TestRuntime rt;
    const ActorRef probe = rt.spawn<Probe>();
    rt.spawn<Reminder>(probe);
    const CheckResult<> quiet = rt.expect_none(message<Tick>().to(probe), 150ms);
    EXPECT_FALSE(quiet);
    EXPECT_NE(quiet.text().find("expected no expectation_test::Tick to reactor " +
                                std::to_string(probe.value()) + " (reheap::testing::Probe) within 150 ms\n1 came"),
              std::string::npos)
        << quiet.text();
    EXPECT_NE(quiet.text().find("Tick raw bytes 01000000 from reactor"), std::string::npos) << quiet.text();
    EXPECT_NE(quiet.text().find(" at +100 ms"), std::string::npos) << quiet.text();
    EXPECT_EQ(rt.steady_now(), VirtualClock::kSteadyEpoch + 150ms);  // the whole span, passed or not
  }
}

TEST(ExpectNone, OnlyMessagesOfThePatternCount) {
  TestRuntime rt;
  const ActorRef probe = rt.spawn<Probe>();
  const ActorRef other = rt.spawn<Probe>();
  rt.spawn<Reminder>(other);
  const CheckResult<> r = rt.expect_none(message().to(probe), 1s);
  EXPECT_TRUE(r) << r.text();
  EXPECT_NE(r.text().find("none came (1 other message did)"), std::string::npos) << r.text();
  const CheckResult<> wrong_value = rt.expect_none(message<Tick>().with(Tick{2}), 1s);
  EXPECT_TRUE(wrong_value) << wrong_value.text();
}

TEST(Expect, WithASpanFiresTimersUntilTheMessageComes) {
  TestRuntime rt;
  const ActorRef probe = rt.spawn<Probe>();
  rt.spawn<Reminder>(probe);
  const CheckResult<Tick> early = rt.expect(message<Tick>().to(probe));
  EXPECT_FALSE(early);
  EXPECT_NE(early.text().find("timers are armed: give expect a span"), std::string::npos) << early.text();
  EXPECT_EQ(rt.steady_now(), VirtualClock::kSteadyEpoch);

  const CheckResult<Tick> late = rt.expect(message<Tick>().to(probe), 50ms);
  EXPECT_FALSE(late);
  EXPECT_NE(late.text().find("within 50 ms\nno such message"), std::string::npos) << late.text();
  EXPECT_EQ(rt.steady_now(), VirtualClock::kSteadyEpoch + 50ms);

  const CheckResult<Tick> tick = rt.expect(message<Tick>().to(probe).with(Tick{1}), 100ms);
  EXPECT_TRUE(tick) << tick.text();
  EXPECT_EQ(rt.steady_now(), VirtualClock::kSteadyEpoch + 100ms);  // the timer's time, not the span's end
}

// A check takes the oldest pending message of the mailbox its addresses pick: another mailbox's
// older messages may wait, one channel's order never changes.
TEST(ExpectOrder, TheMailboxIsChosenByAddressesAndAChannelKeepsItsOrder) {
  TestRuntime rt;
  const ActorRef x = rt.spawn<Probe>();
  const ActorRef y = rt.spawn<Probe>();
  rt.send(x, Tick{1});
  rt.send(y, Tick{2});
  rt.send(x, Tick{3});
  // y's message goes before x's older ones: a receiver's mailbox is its own.
  EXPECT_TRUE(rt.expect(message<Tick>().to(y).with(Tick{2})));
  EXPECT_EQ(rt.reactor<Probe>(x).count(), 0u);
  // Within x's channel the order holds: Tick{3} is not next, and stays pending.
  const CheckResult<Tick> overtaking = rt.expect(message<Tick>().to(x).with(Tick{3}));
  EXPECT_FALSE(overtaking);
  EXPECT_NE(overtaking.text().find("Tick raw bytes 01000000"), std::string::npos) << overtaking.text();
  EXPECT_EQ(rt.pending(), 2u);
  EXPECT_TRUE(rt.expect(message<Tick>().to(x).with(Tick{1})));
  EXPECT_TRUE(rt.expect(message<Tick>().to(x).with(Tick{3})));
}

TEST(ExpectOrder, ASenderPicksItsChannelAndWithoutAddressesTheOldestMessageIsNext) {
  TestRuntime rt;
  const ActorRef x = rt.spawn<Probe>();
  const ActorRef s = rt.spawn<Probe>();
  rt.send(x, Tick{1});           // from the test
  rt.send_from(s, x, Tick{2});   // from s, younger
  EXPECT_TRUE(rt.expect(message<Tick>().from(s).to(x).with(Tick{2})));  // s's channel: its head
  rt.send_from(s, x, Tick{3});
  EXPECT_TRUE(rt.expect(message<Tick>().with(Tick{1})));  // no address: the oldest of all
  EXPECT_TRUE(rt.expect(message<Tick>().with(Tick{3})));
}

TEST(ExpectOrder, StartsRunBeforeTheMailboxIsLookedAt) {
  TestRuntime rt;
  const ActorRef probe = rt.spawn<Probe>();
  const ActorRef greeter = rt.spawn<Greeter>(probe);
  EXPECT_TRUE(rt.expect(message<Tick>().from(greeter).to(probe).with(Tick{0})));
}

}  // namespace expectation_test
