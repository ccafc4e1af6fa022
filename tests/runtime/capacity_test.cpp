// Capacity: 100,000 live reactors at once (each with its own heap), each receiving one message
// and replying, then all stopping. Nothing is measured here (the benchmarks do that): it must
// simply work. Sanitized builds use fewer reactors: ThreadSanitizer's zone holds about 7,000
// heaps, and both sanitizers make each one much more expensive.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "reheap/runtime.h"
#include "reheap/zone.h"
#include "runtime_support.h"

namespace reheap::capacity_test {
namespace {

using rttest::Probe;

constexpr std::size_t kReactors = rttest::kSanitized ? 2'000 : 100'000;

struct Ask {
  ActorRef reply_to;
  std::uint64_t n;
};
struct Answer {
  std::uint64_t n;
};

// Holds a little state in its heap and answers one question.
class Member : public Reactor {
 public:
  explicit Member(std::uint64_t id) : id_(id), name_("member-" + std::to_string(id)) {
    handle<&Member::on_ask>();
  }
  void on_ask(const Ask& a) { send(a.reply_to, Answer{a.n * 2 + (name_.size() > 7 ? 1 : 0)}); }

 private:
  std::uint64_t id_;
  std::string name_;
};

// Counts answers and checks each came back with the right value exactly once.
class Tally : public Reactor {
 public:
  Tally(std::size_t expected, Probe* done) : seen_(expected, false), done_(done) {
    handle<&Tally::on_answer>();
  }
  void on_answer(const Answer& a) {
    const std::uint64_t n = a.n / 2;
    if (a.n % 2 != 1 || n >= seen_.size() || seen_[n]) {
      ++wrong_;
    } else {
      seen_[n] = true;
    }
    if (++answers_ == seen_.size()) done_->done(wrong_);
  }

 private:
  std::vector<bool> seen_;
  Probe* done_;
  std::uint64_t answers_ = 0;
  std::uint64_t wrong_ = 0;
};

TEST(Capacity, AHundredThousandLiveReactorsEachAnswerAMessageAndAllStop) {
  Probe done;
  Runtime rt(RuntimeConfig{.workers = 2});
  const std::size_t heaps_before = Zone::stats().live_heaps;
  const ActorRef tally = rt.spawn<Tally>(kReactors, &done);
  std::vector<ActorRef> members;
  members.reserve(kReactors);
  for (std::size_t i = 0; i < kReactors; ++i) members.push_back(rt.spawn<Member>(i));
  EXPECT_EQ(rt.stats().reactors, kReactors + 1);
  EXPECT_EQ(Zone::stats().live_heaps, heaps_before + kReactors + 1) << "one heap per reactor";
  for (std::size_t i = 0; i < kReactors; ++i) {
    ASSERT_EQ(rt.send(members[i], Ask{tally, i}), SendResult::kOk);
  }
  ASSERT_TRUE(done.wait_for(1, std::chrono::seconds(120)));
  EXPECT_EQ(done.value(), 0u) << "an answer was wrong or duplicated";
  for (const ActorRef m : members) ASSERT_TRUE(rt.stop(m));
  ASSERT_TRUE(
      rttest::wait_until([&] { return rt.stats().reactors == 1; }, std::chrono::seconds(120)))
      << rt.stats().reactors << " reactors left";
  EXPECT_TRUE(rt.wait_idle());
  EXPECT_EQ(Zone::stats().live_heaps, heaps_before + 1) << "the stopped reactors' heaps are gone";
  EXPECT_TRUE(rt.alive(tally));
}

}  // namespace
}  // namespace reheap::capacity_test
