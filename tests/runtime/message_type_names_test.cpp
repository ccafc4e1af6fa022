// Message type names for reports (message.h, message_type_name_of): a program knows the name of
// every message type whose handling, sending or reading code it holds, from its start, whether or
// not that code ran. Knowing a name owns nothing: the first type handled or sent still owns its
// id, and another type of that id is still refused where it is first handled or sent.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "reheap/runtime.h"

// A named namespace, so that the names below are exactly these.
namespace type_names_runtime_test {

using reheap::ActorRef;
using reheap::Message;
using reheap::Reactor;
using reheap::Runtime;
using reheap::detail::message_type_name_of;

// Handled by a reactor that no test constructs: only spawn_unbuilt below, never called, spawns it.
struct Knock {
  int n;
};
class Unbuilt : public Reactor {
 public:
  Unbuilt() { handle<&Unbuilt::on_knock>(); }
  void on_knock(const Knock&) {}
};

// Sent only from a function no test calls.
struct Letter {
  int n;
};

// Read only with Message::is / get in an on_message no test runs.
struct Note {
  int n;
};
class Reader : public Reactor {
 public:
  void on_message(const Message& m) override {
    if (m.is<Note>()) last_ = m.get<Note>().n;
  }

 private:
  int last_ = 0;
};

// Two types of one reheap_message_name: one id.
struct Deposit {
  static constexpr std::string_view reheap_message_name = "names_test.Money";
  int cents;
};
struct Withdrawal {
  static constexpr std::string_view reheap_message_name = "names_test.Money";
  long cents;
};
class DepositSink : public Reactor {
 public:
  DepositSink() { handle<&DepositSink::on_deposit>(); }
  void on_deposit(const Deposit&) {}
};
class WithdrawalSink : public Reactor {
 public:
  WithdrawalSink() { handle<&WithdrawalSink::on_withdrawal>(); }
  void on_withdrawal(const Withdrawal&) {}
};

// Never called: their code is in the binary, as a replayed reactor's is.
ActorRef spawn_unbuilt(Runtime& rt) { return rt.spawn<Unbuilt>(); }
reheap::SendResult send_letter(Runtime& rt, ActorRef to) { return rt.send(to, Letter{1}); }
ActorRef spawn_reader(Runtime& rt) { return rt.spawn<Reader>(); }

TEST(MessageTypeNames, ATypeIsNamedFromProgramStartWhereverItsHandlingSendingOrReadingCodeIs) {
  EXPECT_EQ(message_type_name_of(reheap::message_type_id<Knock>()), "type_names_runtime_test::Knock");
  EXPECT_EQ(message_type_name_of(reheap::message_type_id<Letter>()), "type_names_runtime_test::Letter");
  EXPECT_EQ(message_type_name_of(reheap::message_type_id<Note>()), "type_names_runtime_test::Note");
  EXPECT_EQ(message_type_name_of(0x0123456789abcdefull), "");  // no type of this program
}

TEST(MessageTypeNames, TypesOfOneIdAreAllNamedUntilOneOwnsItAndNamingNeverChangesTheOwner) {
  const std::uint64_t id = reheap::message_type_id<Deposit>();
  ASSERT_EQ(id, reheap::message_type_id<Withdrawal>());
  // Neither handled nor sent yet: either may be meant.
  EXPECT_EQ(message_type_name_of(id), "type_names_runtime_test::Deposit or type_names_runtime_test::Withdrawal");
  // The first handled owns the id, although both were named at start; the other is refused.
  { const DepositSink first; }
  EXPECT_EQ(message_type_name_of(id), "type_names_runtime_test::Deposit");
  EXPECT_THROW({ const WithdrawalSink second; }, std::logic_error);
  EXPECT_EQ(message_type_name_of(id), "type_names_runtime_test::Deposit");
}

}  // namespace type_names_runtime_test
