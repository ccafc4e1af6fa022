// seed_bench: the loops of two published allocator comparisons, run as their authors ran them.
//
// Seed 000 (a memory-pool comparison: boost::pool, nginx, Tempesta): N = 20,000,000 objects of
// 24 B ("Small") and N * 24 / 240 of 240 B ("Big"), each written once, with and without freeing
// every 4th right after it was allocated; and "cr. & destr.": N / 100 pools, each created, given
// 100 objects (Big when the pool's index is a multiple of 4, else Small) and destroyed.
// Seed 003 (unordered_set<int>): 1,000,000 random ints inserted, erased one by one, reinserted;
// TSC ticks per operation. Seed 004 (PostgreSQL and mmap): large blocks freed and allocated again
// (huge_cycles).
//
// One source, one executable per allocator (CMakeLists.txt), as alloc_bench does: the plain
// `new` lines measure whatever allocator the executable links. The reheap executable runs them
// inside a HeapScope of a fresh heap (and a pool is a Heap), and again, labelled "reheap, one
// heap", all four in one heap made before them; the glibc executable also runs the
// pool libraries of seed 000: boost::object_pool, boost::pool<>, std::pmr pools. The "Small" and
// "Big" lines keep the objects' addresses in an array made before the clock starts and free them
// after it stops, so that every allocator gets its memory back the same way (seed 000 leaves the
// destruction of its pools out of the timing too). Output: one line per measurement,
// "<line>\t<allocator>\t<value>\t<unit>", read by seed_bench.sh.
#include <boost/pool/object_pool.hpp>
#include <boost/pool/pool.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory_resource>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "bench_clock.h"

#ifdef SEED_BENCH_REHEAP
#include <reheap/heap.h>
#include <reheap/heap_scope.h>
#endif

namespace {

struct Small {
  long v[3];
};
struct Big {
  long v[30];
};
static_assert(sizeof(Small) == 24 && sizeof(Big) == 240);

constexpr std::size_t kN = 20'000'000;

inline void escape(void* p) { asm volatile("" : : "g"(p) : "memory"); }

// touch_obj() of the seed: the object is checked and written once.
template <class T>
inline void touch(T* o) {
  if (__builtin_expect(o == nullptr, 0)) {
    std::fprintf(stderr, "seed_bench: failed alloc\n");
    std::abort();
  }
  o->v[0] = 1;
  escape(o);
}

void report(const std::string& line, const char* alloc, double value, const char* unit) {
  std::printf("%s\t%s\t%.3f\t%s\n", line.c_str(), alloc, value, unit);
  std::fflush(stdout);
}

double ms_since(const bench::Stopwatch& sw) { return static_cast<double>(sw.elapsed().ns) / 1e6; }

#ifdef SEED_BENCH_REHEAP
// The heap of the "reheap, one heap" lines: one for all of them, as a process has one malloc heap
// (or a reactor its one heap), made before the first of them.
reheap::Heap* g_shared_heap = nullptr;
#endif

// What runs the plain-`new` lines: a fresh reheap heap made current (the shared one while
// g_shared_heap is set), or nothing. `retain` false: the heap keeps no freed huge block (zone.h,
// "Retention"): the cost of huge blocks without retention.
struct AllocatorScope {
  explicit AllocatorScope([[maybe_unused]] bool retain = true) {
#ifdef SEED_BENCH_REHEAP
    if (!retain) heap->set_retain_limit(0);
#endif
  }
#ifdef SEED_BENCH_REHEAP
  reheap::HeapPtr own = g_shared_heap != nullptr ? nullptr : reheap::Heap::create();
  reheap::Heap* heap = g_shared_heap != nullptr ? g_shared_heap : own.get();
  reheap::HeapScope scope{*heap};
#endif
};

// ---- seed 000 with plain new/delete --------------------------------------------------------------

template <class T>
void new_line(const char* alloc, const char* name, bool with_free, std::vector<T*>& keep) {
  const std::size_t n = kN * sizeof(Small) / sizeof(T);
  keep.assign(n, nullptr);
  double ms = 0;
  {
    [[maybe_unused]] AllocatorScope scope;
    const bench::Stopwatch sw;
    for (std::size_t i = 0; i < n; ++i) {
      T* o = new T;
      touch(o);
      if (__builtin_expect(!(i & 3), 0) && with_free) {
        delete o;
      } else {
        keep[i] = o;
      }
    }
    ms = ms_since(sw);
    for (T* o : keep) delete o;
  }
  report(std::string(name) + (with_free ? " w/ free" : ""), alloc, ms, "ms");
}

void new_pools(const char* alloc) {
  Small* small[100];
  Big* big[100];
  const bench::Stopwatch sw;
  for (std::size_t i = 0; i < kN / 100; ++i) {
#ifdef SEED_BENCH_REHEAP
    reheap::HeapPtr pool = reheap::Heap::create();
    reheap::HeapScope scope(*pool);
    for (std::size_t j = 0; j < 100; ++j) {
      if (!(i & 3)) touch(new Big); else touch(new Small);
    }
    (void)small;
    (void)big;
#else
    for (std::size_t j = 0; j < 100; ++j) {
      if (!(i & 3)) touch(big[j] = new Big); else touch(small[j] = new Small);
    }
    for (std::size_t j = 0; j < 100; ++j) {
      if (!(i & 3)) delete big[j]; else delete small[j];
    }
#endif
  }
  report("cr. & destr.", alloc, ms_since(sw), "ms");
}

// ---- seed 000 with the pool libraries (glibc executable only) ------------------------------------

template <class Pool, class T>
void pool_line(const char* alloc, const char* name, bool with_free, Pool& p,
               T* (*get)(Pool&), void (*put)(Pool&, T*)) {
  const std::size_t n = kN * sizeof(Small) / sizeof(T);
  const bench::Stopwatch sw;
  for (std::size_t i = 0; i < n; ++i) {
    T* o = get(p);
    touch(o);
    if (__builtin_expect(!(i & 3), 0) && with_free) put(p, o);
  }
  report(std::string(name) + (with_free ? " w/ free" : ""), alloc, ms_since(sw), "ms");
}

template <class T>
void object_pool_lines(const char* name) {
  for (bool with_free : {false, true}) {
    boost::object_pool<T> p;
    pool_line<boost::object_pool<T>, T>(
        "boost::object_pool", name, with_free, p, [](boost::object_pool<T>& q) { return q.malloc(); },
        [](boost::object_pool<T>& q, T* o) { q.free(o); });
  }
  for (bool with_free : {false, true}) {
    boost::pool<> p(sizeof(T));
    pool_line<boost::pool<>, T>(
        "boost::pool", name, with_free, p, [](boost::pool<>& q) { return static_cast<T*>(q.malloc()); },
        [](boost::pool<>& q, T* o) { q.free(o); });
  }
  for (bool with_free : {false, true}) {
    std::pmr::unsynchronized_pool_resource p;
    pool_line<std::pmr::unsynchronized_pool_resource, T>(
        "pmr::unsync_pool", name, with_free, p,
        [](std::pmr::unsynchronized_pool_resource& q) { return static_cast<T*>(q.allocate(sizeof(T))); },
        [](std::pmr::unsynchronized_pool_resource& q, T* o) { q.deallocate(o, sizeof(T)); });
  }
  for (bool with_free : {false, true}) {
    std::pmr::monotonic_buffer_resource p;
    pool_line<std::pmr::monotonic_buffer_resource, T>(
        "pmr::monotonic", name, with_free, p,
        [](std::pmr::monotonic_buffer_resource& q) { return static_cast<T*>(q.allocate(sizeof(T))); },
        [](std::pmr::monotonic_buffer_resource& q, T* o) { q.deallocate(o, sizeof(T)); });
  }
}

template <class Make>
void pool_pools(const char* alloc, Make make) {
  const bench::Stopwatch sw;
  for (std::size_t i = 0; i < kN / 100; ++i) make(i);
  report("cr. & destr.", alloc, ms_since(sw), "ms");
}

void pool_libraries() {
  object_pool_lines<Small>("Small");
  object_pool_lines<Big>("Big");
  pool_pools("boost::object_pool", [](std::size_t i) {
    if (!(i & 3)) {
      boost::object_pool<Big> p;
      for (int j = 0; j < 100; ++j) touch(p.malloc());
    } else {
      boost::object_pool<Small> p;
      for (int j = 0; j < 100; ++j) touch(p.malloc());
    }
  });
  pool_pools("boost::pool", [](std::size_t i) {
    boost::pool<> p(!(i & 3) ? sizeof(Big) : sizeof(Small));
    for (int j = 0; j < 100; ++j) {
      if (!(i & 3)) touch(static_cast<Big*>(p.malloc())); else touch(static_cast<Small*>(p.malloc()));
    }
  });
  pool_pools("pmr::unsync_pool", [](std::size_t i) {
    std::pmr::unsynchronized_pool_resource p;
    for (int j = 0; j < 100; ++j) {
      if (!(i & 3)) touch(static_cast<Big*>(p.allocate(sizeof(Big)))); else touch(static_cast<Small*>(p.allocate(sizeof(Small))));
    }
  });
  pool_pools("pmr::monotonic", [](std::size_t i) {
    std::pmr::monotonic_buffer_resource p;
    for (int j = 0; j < 100; ++j) {
      if (!(i & 3)) touch(static_cast<Big*>(p.allocate(sizeof(Big)))); else touch(static_cast<Small*>(p.allocate(sizeof(Small))));
    }
  });
}

// ---- seed 003 ------------------------------------------------------------------------------------

void unordered_set_phases(const char* alloc, double tsc_hz) {
  constexpr std::size_t kCount = 1'000'000;
  std::vector<int> nums(kCount);
  std::mt19937 rng(42);
  for (int& v : nums) v = static_cast<int>(rng());
  double ticks[3] = {};
  {
    [[maybe_unused]] AllocatorScope scope;
    std::unordered_set<int> s;
    std::uint64_t t0 = bench::tsc_now();
    for (int v : nums) s.insert(v);
    std::uint64_t t1 = bench::tsc_now();
    for (int v : nums) s.erase(v);
    std::uint64_t t2 = bench::tsc_now();
    for (int v : nums) s.insert(v);
    std::uint64_t t3 = bench::tsc_now();
    escape(&s);
    ticks[0] = static_cast<double>(t1 - t0) / kCount;
    ticks[1] = static_cast<double>(t2 - t1) / kCount;
    ticks[2] = static_cast<double>(t3 - t2) / kCount;
  }
  (void)tsc_hz;
  report("uset insert", alloc, ticks[0], "ticks/op");
  report("uset erase", alloc, ticks[1], "ticks/op");
  report("uset reinsert", alloc, ticks[2], "ticks/op");
}

// ---- seed 004 ------------------------------------------------------------------------------------

// What PostgreSQL's developers measured (seed 004): memory handed back to the OS when a large
// block is freed is faulted in again, a page at a time, by the next one. A query's big work area
// (16 MiB, every page written, then freed), 500 times; and a vector grown to 16 MiB by push_back
// (so through every doubling), then destroyed, 100 times.
// `retain` false: reheap's heap keeps no freed huge block (AllocatorScope).
void huge_cycles(const char* alloc, bool retain = true) {
  constexpr std::size_t kBlock = std::size_t{16} << 20;
  double ms = 0;
  {
    [[maybe_unused]] AllocatorScope scope(retain);
    const bench::Stopwatch sw;
    for (int i = 0; i < 500; ++i) {
      auto* p = new char[kBlock];
      for (std::size_t off = 0; off < kBlock; off += 4096) p[off] = static_cast<char>(i);
      escape(p);
      delete[] p;
    }
    ms = ms_since(sw);
  }
  report("huge cycle 16 MiB x500", alloc, ms, "ms");
  {
    [[maybe_unused]] AllocatorScope scope(retain);
    const bench::Stopwatch sw;
    for (int i = 0; i < 100; ++i) {
      std::vector<long> v;
      for (long j = 0; j < (long{2} << 20); ++j) v.push_back(j);
      escape(v.data());
    }
    ms = ms_since(sw);
  }
  report("vector growth to 16 MiB x100", alloc, ms, "ms");
}

}  // namespace

int main(int argc, char** argv) {
  const char* alloc = SEED_BENCH_ALLOCATOR;
  const std::string only = argc > 1 ? argv[1] : "all";
  const double tsc_hz = bench::estimate_tsc_hz(50);
  if (only == "all" || only == "000") {
    std::vector<Small*> small;
    std::vector<Big*> big;
    for (bool with_free : {false, true}) new_line<Small>(alloc, "Small", with_free, small);
    for (bool with_free : {false, true}) new_line<Big>(alloc, "Big", with_free, big);
    new_pools(alloc);
#ifdef SEED_BENCH_REHEAP
    // The same four lines in one heap: each line's freed blocks wait on that heap's free lists for
    // the next line of their size, as they wait in any malloc's heap for the next allocation.
    reheap::HeapPtr shared = reheap::Heap::create();
    g_shared_heap = shared.get();
    for (bool with_free : {false, true}) new_line<Small>("reheap, one heap", "Small", with_free, small);
    for (bool with_free : {false, true}) new_line<Big>("reheap, one heap", "Big", with_free, big);
    g_shared_heap = nullptr;
#endif
  }
  if (only == "cr") new_pools(alloc);
  if (only == "pools") pool_libraries();
  if (only == "all" || only == "003") unordered_set_phases(alloc, tsc_hz);
  if (only == "all" || only == "004") {
    huge_cycles(alloc);
#ifdef SEED_BENCH_REHEAP
    huge_cycles("reheap, retention off", false);
#endif
  }
  return 0;
}
