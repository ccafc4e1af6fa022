// Message type ids are hashes of type names, so two types written with the same name in anonymous
// namespaces of two files get the same id. The first type to be handled or sent owns the id for
// the life of the process; the other is refused where it is first used, naming the clash, instead
// of being delivered to the first type's handlers (type_clash_other.cpp holds the other type).
#include <gtest/gtest.h>

#include <string>

#include "reheap/runtime.h"
#include "runtime_support.h"
#include "type_clash_support.h"

namespace reheap {
namespace {

using rttest::Probe;

struct Clash {  // same name as type_clash_other.cpp's Clash, another type
  std::uint64_t value;
};

class ClashSink : public Reactor {
 public:
  explicit ClashSink(Probe* probe) : probe_(probe) { handle<&ClashSink::on_clash>(); }
  void on_clash(const Clash& c) { probe_->done(c.value); }
  void on_unhandled(const Message&) override { probe_->done(0); }

 private:
  Probe* probe_;
};

struct Named {
  static constexpr std::string_view reheap_message_name = "clashtest.Named";
  std::uint64_t value;
};

TEST(TypeIdClash, TheSecondTypeOfOneNameIsRefusedWhereItIsHandledOrSent) {
  Runtime rt;
  Probe probe;
  const ActorRef sink = rt.spawn<ClashSink>(&probe);  // this file's Clash owns the id from here
  ASSERT_EQ(rt.send(sink, Clash{7}), SendResult::kOk);
  ASSERT_TRUE(probe.wait_for(1));
  EXPECT_EQ(probe.value(), 7u);

  const std::string refused = clashtest::register_other_clash_handler();
  EXPECT_NE(refused.find("Clash"), std::string::npos) << refused;
  EXPECT_NE(refused.find("reheap_message_name"), std::string::npos) << refused;

  // Sent, the other type would reach ClashSink::on_clash as a Clash of this file.
  EXPECT_EQ(clashtest::send_other_clash(rt, sink), SendResult::kTypeClash);
  EXPECT_STREQ(to_string(SendResult::kTypeClash),
               "another type of this program has the same message type name");

  // This file's Clash still goes through, and nothing else reached the sink.
  ASSERT_EQ(rt.send(sink, Clash{9}), SendResult::kOk);
  ASSERT_TRUE(probe.wait_for(2));
  EXPECT_EQ(probe.value(), 9u);
}

TEST(TypeIdClash, ATypeIsItsOwnClaimantFromEveryThread) {
  Runtime rt;
  Probe probe;
  const ActorRef sink = rt.spawn<ClashSink>(&probe);
  std::vector<std::thread> senders;
  std::atomic<int> refused{0};
  for (int t = 0; t < 4; ++t) {
    senders.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        if (rt.send(sink, Named{1}) != SendResult::kOk) ++refused;
      }
    });
  }
  for (std::thread& s : senders) s.join();
  EXPECT_EQ(refused.load(), 0);
  ASSERT_TRUE(probe.wait_for(200));  // Named is unhandled by ClashSink: on_unhandled counts it
}

}  // namespace
}  // namespace reheap
