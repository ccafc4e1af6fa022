// request_reply: a reactor asks another one for a price with Reactor::request and gets the answer,
// or a timeout, in a continuation; main asks from outside with Runtime::ask, on the same mechanism.
//
//   ./request_reply
// Prints the quotes the shop got, one timeout (a product nobody prices), and the shop's total.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <thread>

#include "reheap/runtime.h"

namespace {

using namespace std::chrono_literals;

struct PriceQuery {
  std::uint32_t product;
};
struct Price {
  std::uint32_t product;
  std::uint64_t cents;
};
struct Buy {
  std::uint64_t catalog;  // ActorRef value
  std::uint32_t product;
};
struct TotalQuery {
  std::uint32_t unused;
};
struct Total {
  std::uint64_t cents;
  std::uint32_t failed;
};

// Prices products below 100; others it never answers (their requests time out).
class Catalog : public reheap::Reactor {
 public:
  Catalog() { handle<&Catalog::on_query>(); }
  void on_query(const PriceQuery& q) {
    if (q.product < 100) reply(Price{q.product, 199 + 100ULL * q.product});
  }
};

// Buys a product at the catalog's price: the continuation runs later, as an event of the shop,
// with the shop's heap current, like any handler.
class Shop : public reheap::Reactor {
 public:
  Shop() {
    handle<&Shop::on_buy>();
    handle<&Shop::on_total>();
  }
  void on_buy(const Buy& b) { request<&Shop::on_price>(reheap::ActorRef(b.catalog), PriceQuery{b.product}, 50ms); }
  void on_price(const reheap::Response<Price>& r) {
    if (!r) {
      std::printf("shop: request %llx failed: %s\n", static_cast<unsigned long long>(r.id()),
                  reheap::to_string(r.error()));
      ++failed_;
      return;
    }
    std::printf("shop: product %u costs %llu cents\n", r.value().product,
                static_cast<unsigned long long>(r.value().cents));
    total_ += r.value().cents;
  }
  void on_total(const TotalQuery&) { reply(Total{total_, failed_}); }

 private:
  std::uint64_t total_ = 0;
  std::uint32_t failed_ = 0;
};

}  // namespace

int main() {
  reheap::Runtime rt(reheap::RuntimeConfig{.workers = 2});
  const reheap::ActorRef catalog = rt.spawn<Catalog>();
  const reheap::ActorRef shop = rt.spawn<Shop>();
  for (const std::uint32_t product : {1u, 7u, 500u, 42u}) rt.send(shop, Buy{catalog.value(), product});
  // The unanswered request times out after 50 ms; ask until the shop has every outcome.
  std::optional<Total> total;
  for (int i = 0; i < 100; ++i) {
    total = rt.ask<Total>(shop, TotalQuery{0});
    if (total && total->failed == 1) break;
    std::this_thread::sleep_for(10ms);
  }
  if (!total) return 1;
  std::printf("main: the shop spent %llu cents, %u request(s) failed\n",
              static_cast<unsigned long long>(total->cents), total->failed);
  return 0;
}
