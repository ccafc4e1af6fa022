// heap_demo: a reactor-style object graph built with plain `new` inside a reheap heap.
//
// A "game world" reactor owns players, each with an inventory and a chat history, indexed by
// name. Every object is created with ordinary C++ (new, std::string, std::vector,
// std::unordered_map) while the reactor's heap is current, so the whole state lies in the heap's
// pages. The demo prints the heap's statistics and then releases it at once, live objects and
// all, without running a single destructor.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/zone.h"

namespace {

struct Item {
  std::string name;
  int weight;
};

struct Player {
  std::string name;
  int x = 0, y = 0;
  std::vector<Item> inventory;
  std::vector<std::string> chat;
  Player* last_opponent = nullptr;  // pointers inside the heap form a graph
};

struct World {  // the reactor: the root of its heap
  std::unordered_map<std::string, std::unique_ptr<Player>> players;
  std::uint64_t tick = 0;

  void react_join(const std::string& name) {
    auto p = std::make_unique<Player>();
    p->name = name;
    players.emplace(name, std::move(p));
  }
  void react_move(Player& p, int dx, int dy) {
    p.x += dx;
    p.y += dy;
    if (p.x % 7 == 0) p.inventory.push_back({"stone of " + p.name, p.x % 13});
  }
  void react_chat(Player& from, Player& to, const std::string& text) {
    from.chat.push_back(text);
    from.last_opponent = &to;
  }
};

void print_stats(const char* title, const reheap::HeapStats& s) {
  std::printf("%s\n", title);
  std::printf("  live:      %9zu blocks %12zu bytes\n", s.live_blocks, s.live_bytes);
  std::printf("  committed: %12zu bytes (%zu class chunks, %zu large chunks)\n", s.committed_bytes,
              s.class_chunks, s.large_chunks);
  std::printf("  reserved:  %12zu bytes of address space\n", s.reserved_bytes);
  std::printf("  OS calls:  %llu mprotect, %llu madvise\n",
              static_cast<unsigned long long>(s.os.mprotect),
              static_cast<unsigned long long>(s.os.madvise));
  std::printf("  class   block      live      free\n");
  for (const reheap::ClassStats& c : s.classes) {
    if (c.live_blocks + c.free_blocks == 0) continue;
    std::printf("  %9u B %9llu %9llu\n", c.block_size,
                static_cast<unsigned long long>(c.live_blocks),
                static_cast<unsigned long long>(c.free_blocks));
  }
  std::printf("  large:     %9llu blocks %12zu bytes (%zu bytes in free runs)\n",
              static_cast<unsigned long long>(s.large_live_blocks), s.large_live_bytes,
              s.large_free_bytes);
}

}  // namespace

int main() {
  using Clock = std::chrono::steady_clock;
  reheap::HeapPtr heap = reheap::Heap::create();
  std::printf("reheap heap demo: heap %llu in the zone at %#lx\n\n", static_cast<unsigned long long>(heap->id()),
              static_cast<unsigned long>(reheap::Zone::stats().base));

  const auto start = Clock::now();
  {
    reheap::HeapScope scope(*heap);  // from here on, plain `new` allocates in the heap
    auto* world = new World;
    heap->set_root(world);
    for (int i = 0; i < 20000; ++i) world->react_join("player-" + std::to_string(i));
    std::vector<Player*> all;
    for (auto& [name, p] : world->players) all.push_back(p.get());
    for (int round = 0; round < 20; ++round) {
      for (std::size_t i = 0; i < all.size(); ++i) {
        world->react_move(*all[i], round + 1, static_cast<int>(i % 3));
        if (i % 5 == 0) {
          world->react_chat(*all[i], *all[(i * 31 + 7) % all.size()],
                            "gg round " + std::to_string(round));
        }
      }
      ++world->tick;
    }
  }
  const auto built = Clock::now();

  auto* world = static_cast<World*>(heap->root());
  const Player& some = *world->players.at("player-42");
  std::printf("world after %llu ticks: %zu players; player-42 at (%d, %d) holds %zu items, "
              "last spoke to %s\n\n",
              static_cast<unsigned long long>(world->tick), world->players.size(), some.x,
              some.y, some.inventory.size(),
              some.last_opponent != nullptr ? some.last_opponent->name.c_str() : "nobody");
  print_stats("heap statistics:", heap->stats());

  const auto released_at = Clock::now();
  heap.reset();  // region semantics: every object goes at once, no destructor runs
  const auto released = Clock::now();
  auto us = [](auto d) { return std::chrono::duration<double, std::micro>(d).count(); };
  std::printf("\nbuilt the world in %.0f us; released the whole heap in %.0f us\n",
              us(built - start), us(released - released_at));
  std::printf("zone now holds %zu live heaps\n", reheap::Zone::stats().live_heaps);
  return 0;
}
