// The mailbox's queue itself (runtime/src/messaging/mailbox.h), without a runtime: what an empty queue
// answers, the backlog counts, and, under many producer threads pushing single envelopes and
// chains while the consumer pops, that nothing is lost and each producer's envelopes come out in
// the order it pushed them.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "messaging/envelope.h"
#include "messaging/mailbox.h"
#include "runtime_support.h"

namespace reheap::detail {
namespace {

// An envelope tagged (producer, seq) in fields the queue does not touch.
Envelope* tagged(std::uint64_t producer, std::uint64_t seq) {
  Envelope* e = allocate_envelope(0);
  EXPECT_NE(e, nullptr);
  e->sender = producer;
  e->type_id = seq;
  return e;
}

TEST(MailboxQueue, AnEmptyQueuePopsNothingAndSaysSo) {
  Mailbox box;
  EXPECT_FALSE(box.nonempty());
  EXPECT_EQ(box.pop(), nullptr);
  EXPECT_EQ(box.waiting(), 0u);
}

TEST(MailboxQueue, SinglesAndChainsComeOutInPushOrderAndEmptyItAgain) {
  Mailbox box;
  box.push(tagged(0, 0));
  Envelope* a = tagged(0, 1);
  Envelope* b = tagged(0, 2);
  Envelope* c = tagged(0, 3);
  a->next = b;
  b->next = c;
  box.push(a, c, 3);
  box.push(tagged(0, 4));
  EXPECT_TRUE(box.nonempty());
  EXPECT_EQ(box.waiting(), 5u);
  for (std::uint64_t seq = 0; seq < 5; ++seq) {
    Envelope* e = box.pop();
    ASSERT_NE(e, nullptr) << "envelope " << seq;
    EXPECT_EQ(e->type_id, seq);
    free_envelope(e);
  }
  EXPECT_EQ(box.pop(), nullptr);
  EXPECT_FALSE(box.nonempty()) << "the last pop must leave the queue empty, not half-linked";
  EXPECT_EQ(box.waiting(), 0u);
  // And it works again from empty, the last envelope included.
  box.push(tagged(0, 5));
  Envelope* e = box.pop();
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->type_id, 5u);
  free_envelope(e);
  EXPECT_FALSE(box.nonempty());
}

TEST(MailboxQueue, TheHighWaterIsTheLongestBacklogTheConsumerFound) {
  Mailbox box;
  for (std::uint64_t i = 0; i < 20; ++i) box.push(tagged(0, i));
  Envelope* e = box.pop();
  ASSERT_NE(e, nullptr);
  free_envelope(e);
  EXPECT_EQ(box.high_water(), 20u);
  EXPECT_EQ(box.waiting(), 19u);
  while ((e = box.pop()) != nullptr) free_envelope(e);
  for (std::uint64_t i = 0; i < 5; ++i) box.push(tagged(0, i));
  while ((e = box.pop()) != nullptr) free_envelope(e);
  EXPECT_EQ(box.high_water(), 20u) << "a shorter backlog later leaves the high water";
  box.reset_high_water();
  box.push(tagged(0, 0));
  free_envelope(box.pop());
  EXPECT_EQ(box.high_water(), 1u);
}

// Producers push chains of 1..kMaxChain envelopes (varying, so that single pushes and chains
// interleave), the consumer pops until it has them all.
TEST(MailboxQueue, ManyProducersLoseNothingAndKeepTheirOrder) {
  constexpr std::uint64_t kProducers = 6;
  constexpr std::uint64_t kEach = rttest::kSanitized ? 20'000 : 200'000;
  constexpr std::uint64_t kMaxChain = 7;
  Mailbox box;
  std::atomic<bool> go{false};
  std::vector<std::thread> producers;
  for (std::uint64_t p = 0; p < kProducers; ++p) {
    producers.emplace_back([&box, &go, p] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      std::uint64_t seq = 0;
      while (seq < kEach) {
        const std::uint64_t n = std::min(kEach - seq, 1 + (seq + p) % kMaxChain);
        Envelope* first = tagged(p, seq++);
        Envelope* last = first;
        for (std::uint64_t i = 1; i < n; ++i) {
          last->next = tagged(p, seq++);
          last = last->next;
        }
        box.push(first, last, static_cast<std::uint32_t>(n));
      }
    });
  }
  std::vector<std::uint64_t> next(kProducers, 0);
  std::uint64_t received = 0;
  std::uint64_t out_of_order = 0;
  go.store(true, std::memory_order_release);
  while (received < kProducers * kEach) {
    Envelope* e = box.pop();
    if (e == nullptr) {
      std::this_thread::yield();
      continue;
    }
    if (e->sender >= kProducers || e->type_id != next[e->sender]) ++out_of_order;
    if (e->sender < kProducers) next[e->sender] = e->type_id + 1;
    ++received;
    free_envelope(e);
  }
  for (auto& t : producers) t.join();
  EXPECT_EQ(out_of_order, 0u);
  for (std::uint64_t p = 0; p < kProducers; ++p) EXPECT_EQ(next[p], kEach) << "producer " << p;
  EXPECT_EQ(box.pop(), nullptr) << "more came out than went in";
  EXPECT_FALSE(box.nonempty());
  EXPECT_EQ(box.waiting(), 0u);
}

}  // namespace
}  // namespace reheap::detail
