// Helper modes for held_for_restore_test.cpp (held_helper.h).
#include "held_helper.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include "cases.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"

namespace reheap::snaptest {
namespace {

int failed(const std::string& why) {
  std::printf("failed: %s\n", why.c_str());
  return 1;
}

std::size_t first_chunk(const Heap& heap) { return static_cast<std::size_t>((heap.id() & 0xffffffffu) - 1); }

std::size_t held() { return Zone::stats().held_chunks; }

int same_process(const std::filesystem::path& dir) {
  HeapPtr placeholder = Heap::create();  // reserves the zone before the quarantine changes
  Zone::set_quarantine(0);               // a chunk given back is free at once...
  Zone::purge_heap_cache();
  HeapCacheConfig no_cache;
  no_cache.heaps = 0;
  Zone::set_heap_cache(no_cache);  // ...and no heap is cached for reuse
  const Case& c = find_case("map");
  const std::filesystem::path file = dir / "s.snap";
  std::size_t chunk = 0;
  std::uint64_t digest = 0;
  const std::size_t before = held();
  {
    HeapPtr saved = Heap::create();
    build_in(*saved, c, 11);
    chunk = first_chunk(*saved);
    digest = digest_of(*saved, c);
    Snapshotter(*saved).save(file);
  }
  std::printf("held-after-save %zu\n", held() - before);
  std::vector<HeapPtr> others;
  for (int i = 0; i < 6; ++i) {
    others.push_back(Heap::create());
    if (first_chunk(*others.back()) == chunk) return failed("a new heap took the saved heap's chunk");
  }
  HeapPtr back = restore(file);
  if (digest_of(*back, c) != digest) return failed("the restored heap differs");
  back.reset();
  if (held() - before == 0) return failed("the chunk was let go when the restored heap was destroyed");
  remove_snapshot(file);
  std::printf("held-after-remove %zu\n", held() - before);
  HeapPtr next = Heap::create();
  std::printf("reused %d\n", first_chunk(*next) == chunk ? 1 : 0);
  return 0;
}

int save(int argc, char** argv) {
  const Case& c = find_case("map");
  std::vector<HeapPtr> heaps;
  for (int i = 3; i < argc; ++i) {
    heaps.push_back(Heap::create());
    build_in(*heaps.back(), c, static_cast<std::uint64_t>(i));
    Snapshotter(*heaps.back()).save(argv[i]);
  }
  std::printf("held %zu\nsaved\n", held());
  return 0;
}

int start() {
  try {
    HeapPtr heap = Heap::create();
    std::printf("held %zu\n", held());
  } catch (const std::bad_alloc&) {
    std::printf("refused\n");
  }
  return 0;
}

int restore_files(int argc, char** argv) {
  std::vector<HeapPtr> heaps;
  for (int i = 0; i < 3; ++i) heaps.push_back(Heap::create());
  for (int i = 3; i < argc; ++i) {
    try {
      heaps.push_back(restore(argv[i]));
    } catch (const SnapshotError& e) {
      return failed(std::string(argv[i]) + ": " + to_string(e.code()) + ": " + e.what());
    }
  }
  std::printf("restored %d\n", argc - 3);
  return 0;
}

int renames(const std::filesystem::path& dir, int n, bool through_reheap) {
  const Case& c = find_case("map");
  std::filesystem::path previous;
  for (int i = 0; i < n; ++i) {
    const std::filesystem::path file = dir / ("n-" + std::to_string(i) + ".snap");
    {
      HeapPtr heap = Heap::create();
      build_in(*heap, c, static_cast<std::uint64_t>(i));
      Snapshotter(*heap).save(file);
    }
    if (!previous.empty()) {
      if (through_reheap) {
        remove_snapshot(previous);
      } else {
        std::filesystem::remove(previous);
      }
    }
    previous = file;
  }
  std::printf("held %zu\n", held());
  return 0;
}

}  // namespace

int held_helper(int argc, char** argv) {
  const std::string mode = argc >= 3 ? argv[2] : "";
  try {
    if (mode == "same-process" && argc == 4) return same_process(argv[3]);
    if (mode == "save" && argc >= 4) return save(argc, argv);
    if (mode == "compact" && argc == 5) {
      HeapPtr heap = Heap::create();  // the registry is read when the zone is reserved
      compact(argv[3], argv[4]);
      return 0;
    }
    if (mode == "start" && argc == 3) return start();
    if (mode == "restore" && argc >= 4) return restore_files(argc, argv);
    if (mode == "renames" && argc == 6) {
      return renames(argv[3], std::atoi(argv[4]), std::string(argv[5]) == "remove");
    }
  } catch (const std::exception& e) {
    return failed(e.what());
  }
  return failed("usage: see held_helper.h");
}

}  // namespace reheap::snaptest
