// Snapshot demo: a small game world saved to disk, changed, saved again as an increment, then
// restored by a second run of this program (a new process) at the same addresses.
//
//   snapshot_demo save DIR      build the world, write DIR/world.full and DIR/world.inc1
//   snapshot_demo restore DIR   restore DIR/world.inc1 (and its parent), use the world, print it
//
// ASLR stays on: the second run loads the program elsewhere, and restore relocates the vtables,
// std::function managers and string literals the heap points to (reheap/program_refs.h).
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"

namespace {

struct Entity {
  virtual ~Entity() = default;
  virtual std::string describe() const = 0;
};

struct Player final : Entity {
  std::string name;
  int score;
  Player(std::string n, int s) : name(std::move(n)), score(s) {}
  std::string describe() const override { return "player " + name + " (" + std::to_string(score) + ")"; }
};

struct Monster final : Entity {
  int hp;
  explicit Monster(int h) : hp(h) {}
  std::string describe() const override { return "monster with " + std::to_string(hp) + " hp"; }
};

struct World {
  std::map<std::string, std::unique_ptr<Entity>> entities;
  std::vector<std::function<int(int)>> rules;  // lambdas survive too: they are code pointers
  long tick = 0;
};

int save(const std::string& dir) {
  reheap::HeapPtr heap = reheap::Heap::create();
  reheap::Snapshotter snapshots(*heap);
  World* world = nullptr;
  {
    reheap::HeapScope scope(*heap);
    world = new World;
    world->entities["alice"] = std::make_unique<Player>("alice", 10);
    world->entities["orc"] = std::make_unique<Monster>(30);
    const int bonus = 5;
    world->rules.push_back([bonus](int score) { return score + bonus; });
    heap->set_root(world);
  }
  reheap::SnapshotInfo full = snapshots.save(dir + "/world.full");
  std::printf("saved %s: %llu pages, %llu bytes\n", (dir + "/world.full").c_str(),
              static_cast<unsigned long long>(full.pages_written),
              static_cast<unsigned long long>(full.bytes_written));
  {
    reheap::HeapScope scope(*heap);
    world->entities["bob"] = std::make_unique<Player>("bob", 7);
    world->entities.erase("orc");
    world->tick = 42;
  }
  reheap::SnapshotInfo inc = snapshots.save_increment(dir + "/world.inc1");
  std::printf("saved %s: %s, %llu pages, %llu bytes (tracking: %s)\n", (dir + "/world.inc1").c_str(),
              inc.kind == reheap::SnapshotKind::kIncremental ? "increment" : "full",
              static_cast<unsigned long long>(inc.pages_written),
              static_cast<unsigned long long>(inc.bytes_written), inc.tracking.c_str());
  return 0;
}

int restore(const std::string& dir) {
  reheap::HeapPtr heap = reheap::restore(dir + "/world.inc1");
  reheap::HeapScope scope(*heap);
  auto* world = static_cast<World*>(heap->root());
  std::printf("restored the world at tick %ld:\n", world->tick);
  for (const auto& [name, entity] : world->entities) {
    std::printf("  %s: %s, with the rule applied: %d\n", name.c_str(), entity->describe().c_str(),
                world->rules[0](static_cast<int>(name.size())));
  }
  world->entities["carol"] = std::make_unique<Player>("carol", 1);  // and it keeps working
  std::printf("  now %zu entities\n", world->entities.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "save") != 0 && std::strcmp(argv[1], "restore") != 0)) {
    std::fprintf(stderr, "usage: snapshot_demo save|restore DIR\n");
    return 2;
  }
  try {
    return std::strcmp(argv[1], "save") == 0 ? save(argv[2]) : restore(argv[2]);
  } catch (const reheap::SnapshotError& e) {
    std::fprintf(stderr, "snapshot_demo: %s (%s)\n", e.what(), reheap::to_string(e.code()));
    if (e.code() == reheap::SnapshotErrc::kRangeInUse) {
      std::fprintf(stderr,
                   "snapshot_demo: the addresses the world's heap needs are taken in this process. "
                   "Restore before creating heaps, and give each run of a program the same state "
                   "directory (REHEAP_STATE_DIR=DIR): its new heaps then keep out of the way of the "
                   "snapshots it saved\n");
    }
    return 1;
  } catch (const std::exception& e) {
    // The zone or the node's state directory (REHEAP_STATE_DIR) could not be set up.
    std::fprintf(stderr, "snapshot_demo: %s\n", e.what());
    return 1;
  }
}
