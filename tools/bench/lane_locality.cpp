// lane_locality: what it costs a program to reach its small objects at random when they lie in a
// heap's class lanes (layout.h) rather than packed in one range, as a malloc that carves a size
// class from contiguous pages places them.
//
// 1M objects of 16 bytes (16 MiB, the node size of seed 003's unordered_set<int>) are allocated
// from a reheap heap in order, and the same number of 16-byte slots are laid out packed in one
// mapping. Each layout is read two ways, in the same random order: independent loads (a hash
// table's bucket probes), and a chase of pointers stored in the objects (walking chains). The
// heap's lanes put them in 16 regions of 2 MiB (each chunk's first lane, then its other 31 in one
// range) against the packed layout's 8; a layout of one lane per 2 MiB would put them in 256, and
// each TLB miss would walk more page-table pages.
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "reheap/heap.h"

namespace {

constexpr std::size_t kObjects = std::size_t{1} << 20;
constexpr std::size_t kObjectSize = 16;
constexpr int kRounds = 4;

double ns_since(std::chrono::steady_clock::time_point t0, std::size_t ops) {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
         static_cast<double>(ops);
}

struct Result {
  double independent_ns;
  double chase_ns;
};

// Links objects[order[k]] to objects[order[k + 1]] and times both ways of reading them.
Result measure(const std::vector<std::uint64_t*>& objects, const std::vector<std::uint32_t>& order) {
  for (std::size_t k = 0; k < kObjects; ++k) {
    *objects[order[k]] = reinterpret_cast<std::uint64_t>(objects[order[(k + 1) % kObjects]]);
  }
  std::uint64_t sum = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < kRounds; ++r) {
    for (std::size_t k = 0; k < kObjects; ++k) sum += *objects[order[k]];
  }
  const double independent = ns_since(t0, kRounds * kObjects);
  auto* p = objects[order[0]];
  t0 = std::chrono::steady_clock::now();
  for (std::size_t k = 0; k < kRounds * kObjects; ++k) p = reinterpret_cast<std::uint64_t*>(*p);
  const double chase = ns_since(t0, kRounds * kObjects);
  asm volatile("" : : "r"(sum), "r"(p) : "memory");
  return {independent, chase};
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  std::vector<std::uint32_t> order(kObjects);
  for (std::size_t i = 0; i < kObjects; ++i) order[i] = static_cast<std::uint32_t>(i);
  std::shuffle(order.begin(), order.end(), std::mt19937(42));

  reheap::HeapPtr heap = reheap::Heap::create();
  std::vector<std::uint64_t*> in_lanes(kObjects);
  for (auto& o : in_lanes) o = static_cast<std::uint64_t*>(heap->allocate(kObjectSize));

  void* range = mmap(nullptr, kObjects * kObjectSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (range == MAP_FAILED) return 1;
  std::vector<std::uint64_t*> packed(kObjects);
  for (std::size_t i = 0; i < kObjects; ++i) {
    packed[i] = reinterpret_cast<std::uint64_t*>(static_cast<char*>(range) + i * kObjectSize);
  }

  std::printf("layout           independent loads (ns)   pointer chase (ns)\n");
  for (int rep = 0; rep < reps; ++rep) {
    const Result l = measure(in_lanes, order);
    const Result p = measure(packed, order);
    std::printf("reheap lanes     %8.2f                 %8.1f\n", l.independent_ns, l.chase_ns);
    std::printf("packed           %8.2f                 %8.1f\n", p.independent_ns, p.chase_ns);
  }
  munmap(range, kObjects * kObjectSize);
  return 0;
}
