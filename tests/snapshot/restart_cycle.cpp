// One life of a restarted service (restart_cycle.h).
#include "restart_cycle.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cases.h"
#include "reheap/heap_scope.h"
#include "reheap/node_identity.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"

namespace reheap::snaptest {
namespace {

// A service's state, all of it in its heap.
struct ServiceState {
  std::uint64_t cycles = 0;  // lives it has been through
  std::uint64_t check = 0;   // of everything below, as saved
  std::vector<std::vector<std::uint64_t>> blocks;  // filled with mix(seeds[i], word)
  std::vector<std::uint64_t> seeds;
  std::map<std::uint64_t, std::string> notes;
};

// Reads a sample of every block (its size, and every 509th word) and all notes.
std::uint64_t check_of(const ServiceState& s) {
  std::uint64_t h = mix(s.cycles, s.blocks.size());
  for (std::size_t i = 0; i < s.blocks.size(); ++i) {
    const std::vector<std::uint64_t>& b = s.blocks[i];
    h = mix(h, b.size());
    for (std::size_t w = 0; w < b.size(); w += 509) h = mix(h, b[w] ^ mix(s.seeds[i], w));
    if (!b.empty()) h = mix(h, b.back() ^ mix(s.seeds[i], b.size() - 1));
  }
  for (const auto& [key, text] : s.notes) h = mix(mix(h, key), text.size() + static_cast<unsigned char>(text[0]));
  return h;
}

// One life's changes, with the heap current: a new block from 64 KiB (a large page run) to 3 MiB
// (a huge run of its own), the oldest dropped past three, notes added and removed.
void grow(ServiceState& s, std::uint64_t seed) {
  ++s.cycles;
  const std::uint64_t r = mix(seed, s.cycles);
  const std::size_t words = (std::size_t{64} << 10) / 8 + r % ((std::size_t{3} << 20) / 8);
  s.seeds.push_back(mix(r, 1));
  s.blocks.emplace_back(words);
  for (std::size_t w = 0; w < words; ++w) s.blocks.back()[w] = mix(s.seeds.back(), w);
  if (s.blocks.size() > 3) {
    s.blocks.erase(s.blocks.begin());
    s.seeds.erase(s.seeds.begin());
  }
  for (std::uint64_t i = 0; i < 40; ++i) s.notes[mix(r, i) % 500] = std::string(8 + mix(r, i) % 300, 'n');
  for (std::uint64_t i = 0; i < 20; ++i) s.notes.erase(mix(r, i + 100) % 500);
  s.check = check_of(s);
}

// Another reactor of the service: a heap that grows before the saved ones come back.
HeapPtr spawn(std::uint64_t seed) {
  HeapPtr heap = Heap::create();
  HeapScope scope(*heap);
  auto* parts = new std::vector<std::unique_ptr<unsigned char[]>>;
  for (std::size_t n : {std::size_t{48}, std::size_t{4000}, std::size_t{100} << 10,
                        (std::size_t{2} << 20) + mix(seed, 7) % (std::size_t{3} << 20)}) {
    for (int i = 0; i < (n < 5000 ? 200 : 1); ++i) {
      parts->emplace_back(new unsigned char[n]);
      fill_words(parts->back().get(), n, seed + n);
    }
  }
  heap->set_root(parts);
  return heap;
}

// Why `heap` does not hold a sound ServiceState, or "".
std::string unsound(const Heap& heap) {
  const auto* s = static_cast<const ServiceState*>(heap.root());
  if (s == nullptr) return "no root";
  if (Heap::owner_of(s) != &heap) return "the root is not in the heap";
  if (check_of(*s) != s->check) return "the state of life " + std::to_string(s->cycles) + " fails its check";
  return "";
}

// The newest b-<k>.snap in `dir` and its k, or an empty path.
std::filesystem::path newest_b(const std::filesystem::path& dir, std::uint64_t* k) {
  std::filesystem::path newest;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 8 || name.rfind("b-", 0) != 0 || name.substr(name.size() - 5) != ".snap") continue;
    const std::uint64_t n = std::strtoull(name.c_str() + 2, nullptr, 10);
    if (newest.empty() || n > *k) {
      newest = entry.path();
      *k = n;
    }
  }
  return newest;
}

}  // namespace

int restart_cycle(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "restart-cycle: usage: <dir> <spawned> <seed>\n");
    return 1;
  }
  const std::filesystem::path dir = argv[2];
  const std::size_t spawned = std::strtoull(argv[3], nullptr, 10);
  const std::uint64_t seed = std::strtoull(argv[4], nullptr, 10);
  const NodeIdentity node = NodeIdentity::current();

  std::vector<HeapPtr> others;
  for (std::size_t i = 0; i < spawned; ++i) others.push_back(spawn(mix(seed, i)));

  const std::filesystem::path a_file = dir / "a.snap";
  std::uint64_t b_k = 0;
  const std::filesystem::path b_file = newest_b(dir, &b_k);
  HeapPtr a;
  HeapPtr b;
  int restored = 0;
  for (auto [file, heap] : {std::pair{a_file, &a}, std::pair{b_file, &b}}) {
    if (file.empty() || !std::filesystem::exists(file)) {
      *heap = Heap::create();
      HeapScope scope(**heap);
      (*heap)->set_root(new ServiceState);
      continue;
    }
    try {
      *heap = restore(file);
    } catch (const SnapshotError& e) {
      std::printf("collision: incarnation %u: %s\n", node.incarnation, e.what());
      return e.code() == SnapshotErrc::kRangeInUse ? 3 : 1;
    }
    if (const std::string why = unsound(**heap); !why.empty()) {
      std::printf("restored %s unsound: %s\n", file.c_str(), why.c_str());
      return 1;
    }
    ++restored;
  }
  for (HeapPtr* heap : {&a, &b}) {
    HeapScope scope(**heap);
    grow(*static_cast<ServiceState*>((*heap)->root()), mix(seed, heap == &a ? 1 : 2));
  }
  Snapshotter(*a).save(a_file);
  const std::filesystem::path next_b = dir / ("b-" + std::to_string(b_k + 1) + ".snap");
  Snapshotter(*b).save(next_b);
  if (!b_file.empty()) remove_snapshot(b_file);
  {
    HeapPtr scratch = spawn(mix(seed, 99));
    Snapshotter(*scratch).save(dir / "scratch.snap");
  }
  std::filesystem::remove(dir / "scratch.snap");
  std::printf("incarnation %u spawned %zu restored %d held %zu\n", node.incarnation, spawned, restored,
              Zone::stats().held_chunks);
  return 0;
}

}  // namespace reheap::snaptest
