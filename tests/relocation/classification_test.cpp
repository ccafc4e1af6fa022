// What a save lists as pointers into the program: each kind of pointer a heap holds is found and
// named, and data that only looks like numbers - random words, hashes - is never taken for one
// (the false-positive measurement; tools/bench/relocation_bench.cpp measures it at scale).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <typeinfo>
#include <unistd.h>
#include <vector>

#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"

namespace {

struct Shape {
  virtual ~Shape() = default;
  virtual int corners() const = 0;
};
struct Square final : Shape {
  int corners() const override { return 4; }
};

int twice(int x) { return 2 * x; }
long g_counter = 5;

struct Planted {
  Shape* shape = nullptr;
  int (*function)(int) = nullptr;
  const char* literal = nullptr;
  const std::type_info* type = nullptr;
  long* global = nullptr;
  std::function<int(int)> lambda;
  std::vector<std::uint64_t> noise;
};

const Planted* root(const reheap::Heap& heap) { return static_cast<const Planted*>(heap.root()); }

std::filesystem::path temp_file(const char* name) {
  return std::filesystem::temp_directory_path() / (std::string(name) + "-" + std::to_string(getpid()));
}

TEST(ProgramRefs, EveryKindOfPointerIsFoundAndNamedAndNoiseIsNot) {
  reheap::HeapPtr heap = reheap::Heap::create();
  reheap::Snapshotter snapshots(*heap, reheap::WriteTracking::kOff);
  std::set<std::uint64_t> planted;
  {
    reheap::HeapScope scope(*heap);
    auto* p = new Planted;
    p->shape = new Square;
    p->function = &twice;
    p->literal = "a literal the heap points at";
    p->type = &typeid(Square);
    p->global = &g_counter;
    p->lambda = [k = 3](int x) { return x + k; };
    // 1M uniformly random words and 1M hashes of strings: data that a conservative scan must
    // not take for pointers.
    std::mt19937_64 random(42);
    p->noise.reserve(2'000'000);
    for (int i = 0; i < 1'000'000; ++i) p->noise.push_back(random());
    for (int i = 0; i < 1'000'000; ++i) p->noise.push_back(std::hash<std::string>{}("key:" + std::to_string(i)));
    heap->set_root(p);
  }
  std::uint64_t vptr = 0;
  std::memcpy(&vptr, root(*heap)->shape, sizeof vptr);
  const Planted* p = root(*heap);
  planted = {vptr, reinterpret_cast<std::uint64_t>(p->function), reinterpret_cast<std::uint64_t>(p->literal),
             reinterpret_cast<std::uint64_t>(p->type), reinterpret_cast<std::uint64_t>(p->global)};
  const std::filesystem::path file = temp_file("reheap-program-refs");
  snapshots.save(file);
  const reheap::SnapshotHeader h = reheap::SnapshotReader(file).header();
  std::filesystem::remove(file);

  std::set<std::uint64_t> found;
  int managers = 0, invokers = 0;
  for (const reheap::ProgramRef& r : h.program_refs) {
    found.insert(r.value);
    if (r.symbol.find("_M_manager") != std::string::npos) ++managers;
    if (r.symbol.find("_M_invoke") != std::string::npos) ++invokers;
    if (planted.count(r.value) == 0 && r.symbol.find("_Function_handler") == std::string::npos) {
      ADD_FAILURE() << "not planted: value " << r.value << " kind " << static_cast<int>(r.kind) << " " << r.symbol;
    }
  }
  for (std::uint64_t v : planted) EXPECT_EQ(found.count(v), 1u) << v;
  EXPECT_EQ(managers, 1);
  EXPECT_EQ(invokers, 1);
  for (const reheap::ProgramRef& r : h.program_refs) {
    if (r.value == reinterpret_cast<std::uint64_t>(&twice)) {
      EXPECT_EQ(r.kind, reheap::ProgramRefKind::kSymbol);
      EXPECT_TRUE(r.function);
      EXPECT_EQ(r.symbol, "_ZN12_GLOBAL__N_15twiceEi");
      EXPECT_EQ(r.file, "classification_test.cpp");
    }
    if (r.kind == reheap::ProgramRefKind::kString) {
      EXPECT_EQ(r.bytes, std::string("a literal the heap points at", 29));
    }
    if (r.value == reinterpret_cast<std::uint64_t>(&g_counter)) {
      EXPECT_EQ(r.symbol, "_ZN12_GLOBAL__N_19g_counterE");
      EXPECT_FALSE(r.function);
      EXPECT_EQ(r.size, sizeof(long));
    }
  }
}

TEST(ProgramRefs, CompactListsWhatTheCompactedPagesHold) {
  reheap::HeapPtr heap = reheap::Heap::create();
  reheap::Snapshotter snapshots(*heap);
  Planted* p = nullptr;
  {
    reheap::HeapScope scope(*heap);
    p = new Planted;
    p->shape = new Square;
    heap->set_root(p);
  }
  const std::filesystem::path full = temp_file("reheap-compact-full");
  const std::filesystem::path increment = temp_file("reheap-compact-inc");
  const std::filesystem::path compacted = temp_file("reheap-compact-out");
  snapshots.save(full);
  {
    reheap::HeapScope scope(*heap);
    p->function = &twice;
    p->literal = "only in the increment";
  }
  snapshots.save_increment(increment);
  reheap::compact(increment, compacted);
  const reheap::SnapshotHeader h = reheap::SnapshotReader(compacted).header();
  std::uint64_t vptr = 0;
  std::memcpy(&vptr, p->shape, sizeof vptr);
  std::set<std::uint64_t> values;
  for (const reheap::ProgramRef& r : h.program_refs) {
    values.insert(r.value);
    EXPECT_EQ(r.words, 1u) << r.symbol;
  }
  EXPECT_TRUE(h.has_program_refs);
  EXPECT_EQ(values, (std::set<std::uint64_t>{vptr, reinterpret_cast<std::uint64_t>(&twice),
                                             reinterpret_cast<std::uint64_t>(p->literal)}));
  for (const auto& f : {full, increment, compacted}) std::filesystem::remove(f);
}

}  // namespace
