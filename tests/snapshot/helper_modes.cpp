// Helper modes of the snapshot test binary (helper_modes.h): the "other process" of the
// cross-process tests.
#include "helper_modes.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cases.h"
#include "conversion_fixture.h"
#include "reheap/aslr.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "held_helper.h"
#include "restart_cycle.h"
#include "support.h"

namespace reheap::snaptest {
namespace {

int fail(const std::string& mode, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", mode.c_str(), message.c_str());
  std::fflush(stderr);
  return 1;
}

// Allocates and frees blocks of every class in the restored heap; "" if all went well.
std::string exercise(Heap& heap) {
  HeapScope scope(heap);
  std::vector<std::string> strings;
  for (std::size_t i = 0; i < 2000; ++i) strings.emplace_back(16 + i % 300, static_cast<char>('a' + i % 26));
  std::vector<std::unique_ptr<unsigned char[]>> blocks;
  for (std::size_t n : {std::size_t{8}, std::size_t{4096}, std::size_t{12000}, std::size_t{200000},
                        std::size_t{3} << 20}) {
    blocks.emplace_back(new unsigned char[n]);
    fill_words(blocks.back().get(), n, n);
  }
  for (std::size_t i = 0; i < strings.size(); ++i) {
    if (strings[i] != std::string(16 + i % 300, static_cast<char>('a' + i % 26))) {
      return "string " + std::to_string(i) + " changed after allocating more";
    }
  }
  for (const auto& b : blocks) {
    if (Heap::owner_of(b.get()) != &heap) return "a block allocated after restore is not the heap's";
  }
  {  // another heap, allocating in every class, must get chunks of its own
    HeapPtr other = Heap::create();
    HeapScope other_scope(*other);
    for (std::size_t n : {std::size_t{64}, std::size_t{100000}, std::size_t{5} << 20}) {
      auto* p = new unsigned char[n];
      if (Heap::owner_of(p) != other.get()) return "another heap was given the restored heap's memory";
      fill_words(p, n, 9);
    }
  }
  std::size_t i = 0;
  for (std::size_t n : {std::size_t{8}, std::size_t{4096}, std::size_t{12000}, std::size_t{200000},
                        std::size_t{3} << 20}) {
    if (!words_intact(blocks[i++].get(), n, n)) return "a block allocated after restore was overwritten";
  }
  return "";
}

int restore_helper(int argc, char** argv) {
  const std::string mode = "restore-helper";
  if (argc != 5 && argc != 7 && argc != 8) {
    return fail(mode, "usage: <case> <file> <digest> [<step> <out> [increment]]");
  }
  const Case& c = find_case(argv[2]);
  const std::filesystem::path file = argv[3];
  const std::uint64_t expected = parse_hex(argv[4]);
  HeapPtr heap;
  try {
    heap = restore(file);
  } catch (const SnapshotError& e) {
    return fail(mode, std::string("restore failed with ") + to_string(e.code()) + ": " + e.what());
  }
  if (heap->root() == nullptr) return fail(mode, "the restored heap has no root");
  if (Heap::owner_of(heap->root()) != heap.get()) return fail(mode, "the root is not in the heap");
  const std::uint64_t got = digest_of(*heap, c);
  if (got != expected) {
    return fail(mode, "digest of case " + std::string(c.name) + " is " + hex(got) + ", expected " +
                          hex(expected));
  }
  // An increment builds on the restored state: attach before anything else writes to the heap.
  const bool increment = argc == 8 && std::string(argv[7]) == "increment";
  try {
    std::unique_ptr<Snapshotter> snapshotter;
    if (increment) {
      snapshotter = std::make_unique<Snapshotter>(*heap);
      snapshotter->attach(file);
    }
    if (std::string why = exercise(*heap); !why.empty()) return fail(mode, why);
    if (digest_of(*heap, c) != expected) return fail(mode, "allocating after restore changed the state");
    if (argc >= 7) {
      if (!snapshotter) snapshotter = std::make_unique<Snapshotter>(*heap);
      mutate_in(*heap, c, std::stoull(argv[5]));
      if (increment) {
        snapshotter->save_increment(argv[6]);
      } else {
        snapshotter->save(argv[6]);
      }
    }
  } catch (const SnapshotError& e) {
    return fail(mode, std::string("save failed with ") + to_string(e.code()) + ": " + e.what());
  }
  return 0;
}

int save_helper(int argc, char** argv) {
  const std::string mode = "save-helper";
  if (argc != 5) return fail(mode, "usage: <case> <file> <seed>");
  const Case& c = find_case(argv[2]);
  HeapPtr heap = Heap::create();
  build_in(*heap, c, std::stoull(argv[4]));
  try {
    Snapshotter snapshotter(*heap);
    snapshotter.save(argv[3]);
  } catch (const SnapshotError& e) {
    return fail(mode, std::string("save failed with ") + to_string(e.code()) + ": " + e.what());
  }
  std::printf("digest %s\n", hex(digest_of(*heap, c)).c_str());
  return 0;
}

int save_fixture(int argc, char** argv) {
  const std::string mode = "save-conversion-fixture";
  if (argc != 3) return fail(mode, "usage: <file>");
  try {
    save_conversion_fixture(argv[2]);
  } catch (const SnapshotError& e) {
    return fail(mode, std::string("save failed with ") + to_string(e.code()) + ": " + e.what());
  }
  return 0;
}

[[noreturn]] void save_loop(int argc, char** argv) {
  const std::string mode = "save-loop";
  if (argc != 3) std::_Exit(fail(mode, "usage: <file>"));
  const std::filesystem::path file = argv[2];
  const Case& c = find_case("map");
  HeapPtr heap;
  LoopRoot* root = nullptr;
  if (std::filesystem::exists(file)) {
    try {
      heap = restore(file);
    } catch (const SnapshotError& e) {
      std::_Exit(fail(mode, std::string("restore failed: ") + e.what()));
    }
    if (std::string why = check_loop_root(*heap); !why.empty()) std::_Exit(fail(mode, why));
    root = static_cast<LoopRoot*>(heap->root());
  } else {
    heap = Heap::create();
    HeapScope scope(*heap);
    root = new LoopRoot;
    root->inner = c.build(7);
    heap->set_root(root);
  }
  Snapshotter snapshotter(*heap);
  for (bool first = true;; first = false) {
    {
      HeapScope scope(*heap);
      c.mutate(root->inner, ++root->step);
    }
    root->digest = c.digest(root->inner);
    try {
      snapshotter.save(file);
    } catch (const SnapshotError& e) {
      std::_Exit(fail(mode, std::string("save failed: ") + e.what()));
    }
    if (first) {
      std::printf("ready\n");
      std::fflush(stdout);
    }
  }
}

}  // namespace

std::string check_loop_root(const Heap& heap) {
  const auto* root = static_cast<const LoopRoot*>(heap.root());
  if (root == nullptr) return "no root";
  const std::uint64_t got = find_case("map").digest(root->inner);
  if (got != root->digest) {
    return "the state saved at step " + std::to_string(root->step) + " has digest " + hex(got) +
           " but was saved with " + hex(root->digest);
  }
  return "";
}

int run_helper_mode(int argc, char** argv) {
  if (argc < 2) return -1;
  const std::string mode = argv[1];
  try {
    if (mode == "--restore-helper") return restore_helper(argc, argv);
    if (mode == "--save-helper") return save_helper(argc, argv);
    if (mode == "--save-loop") save_loop(argc, argv);
    if (mode == "--restart-cycle") return restart_cycle(argc, argv);
    if (mode == "--held") return held_helper(argc, argv);
    if (mode == "--save-conversion-fixture") return save_fixture(argc, argv);
    if (mode == "--aslr-report") {
      std::printf("aslr_off=%d disabled=%d marker=%d why=%s\n", layout_stable() ? 1 : 0,
                  reheap::aslr_disabled() ? 1 : 0, std::getenv("REHEAP_ASLR_REEXEC") != nullptr ? 1 : 0,
                  aslr_reason().c_str());
      return 0;
    }
  } catch (const std::exception& e) {
    return fail(mode, std::string("unexpected exception: ") + e.what());
  }
  return -1;
}

}  // namespace reheap::snaptest
