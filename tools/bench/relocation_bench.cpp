// relocation_bench: what finding and relocating a heap's pointers into the program costs, and how
// often data is mistaken for such a pointer (program_refs.h).
//
//   false positives  the save-time scan over words that are not pointers: uniformly random
//                    64-bit values, hashes (std::hash of strings, a 64-bit mixer) and small
//                    integers; a word counts if it lands in a loaded segment. Then values drawn
//                    uniformly inside the program's own segments - the worst case, data that
//                    does land in the image - and how many of those the symbol check would
//                    accept as pointers (kSymbol) or literals (kString).
//   scan             save side: GiB/s of the scan over pointer-free data and over data with a
//                    vtable pointer every 64 bytes.
//   relocate         restore side: GiB/s of rewriting the same two buffers to a moved layout.
//   restore          for scale: restoring a heap of the same size with nothing to relocate.
// Usage: relocation_bench [GiB] (default 1)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "reheap/byte_stream.h"
#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "snapshot/program_scan.h"
#include "snapshot/relocation.h"

namespace {

using Clock = std::chrono::steady_clock;
using reheap::detail::snapshot::ProgramScan;
using reheap::detail::snapshot::Relocation;

struct Polymorphic {
  virtual ~Polymorphic() = default;
  virtual int f() const { return 1; }
  long data[7] = {};
};

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t candidates(const reheap::ProgramLayout& layout, const std::vector<std::uint64_t>& words) {
  ProgramScan scan(layout);
  scan.scan(reinterpret_cast<std::uintptr_t>(words.data()), words.size() * 8);
  std::uint64_t n = 0;
  for (const reheap::ProgramRef& r : scan.refs()) n += r.words;
  return n;
}

void false_positives(const reheap::ProgramLayout& layout, std::size_t words) {
  std::vector<std::uint64_t> data(words);
  std::mt19937_64 random(7);
  std::generate(data.begin(), data.end(), random);
  std::printf("false positives (words in a loaded segment):\n");
  std::printf("  uniform random 64-bit   %12zu words: %llu\n", words,
              static_cast<unsigned long long>(candidates(layout, data)));
  for (std::size_t i = 0; i < words; ++i) data[i] = mix(i);
  std::printf("  splitmix64(i)           %12zu words: %llu\n", words,
              static_cast<unsigned long long>(candidates(layout, data)));
  const std::size_t strings = std::min<std::size_t>(words, 16u << 20);
  for (std::size_t i = 0; i < strings; ++i) data[i] = std::hash<std::string>{}("key:" + std::to_string(i));
  std::printf("  std::hash<std::string>  %12zu words: %llu\n", strings,
              static_cast<unsigned long long>(candidates(layout, std::vector<std::uint64_t>(data.begin(), data.begin() + static_cast<long>(strings)))));
  for (std::size_t i = 0; i < words; ++i) data[i] = i;
  std::printf("  small integers 0..n     %12zu words: %llu\n", words,
              static_cast<unsigned long long>(candidates(layout, data)));

  // The worst case: values inside the program's segments. How many would the symbol check take?
  std::uint64_t image_bytes = 0;
  for (const reheap::LoadedObject& o : layout) {
    for (const reheap::ImageSegment& s : o.segments) image_bytes += s.end - s.begin;
  }
  std::vector<std::uint64_t> inside;
  const std::size_t n = 1'000'000;
  inside.reserve(n);
  while (inside.size() < n) {
    std::uint64_t at = random() % image_bytes;
    for (const reheap::LoadedObject& o : layout) {
      for (const reheap::ImageSegment& s : o.segments) {
        if (at < s.end - s.begin) {
          inside.push_back((s.begin + at) & ~std::uint64_t{7});
          at = ~std::uint64_t{0};
          break;
        }
        at -= s.end - s.begin;
      }
      if (at == ~std::uint64_t{0}) break;
    }
  }
  ProgramScan scan(layout);
  scan.scan(reinterpret_cast<std::uintptr_t>(inside.data()), inside.size() * 8);
  std::uint64_t by_kind[3] = {};
  for (const reheap::ProgramRef& r : scan.refs()) by_kind[static_cast<int>(r.kind)] += r.words;
  std::printf("  uniform inside the image (%.1f MiB of segments), %zu words: %.2f%% would map by symbol, "
              "%.2f%% as a literal, %.2f%% refused as unresolved\n",
              static_cast<double>(image_bytes) / (1 << 20), n, 100.0 * static_cast<double>(by_kind[0]) / n,
              100.0 * static_cast<double>(by_kind[1]) / n, 100.0 * static_cast<double>(by_kind[2]) / n);
}

// A layout like `now`, with the main executable 4 GiB lower: words saved under it must move.
reheap::SnapshotHeader moved_header(const reheap::ProgramLayout& now, std::uint64_t vptr, std::uint64_t shift) {
  reheap::SnapshotHeader h;
  h.layout = now;
  for (auto& s : h.layout[0].segments) s.begin -= shift, s.end -= shift;
  h.layout[0].base -= shift;
  h.has_program_refs = true;
  reheap::ProgramRef r;
  r.value = vptr - shift;
  r.kind = reheap::ProgramRefKind::kUnresolved;  // same build: moved by the load address
  h.program_refs.push_back(r);
  return h;
}

void scan_and_relocate(const reheap::ProgramLayout& now, std::size_t bytes) {
  Polymorphic probe;
  std::uint64_t vptr = 0;
  std::memcpy(&vptr, &probe, sizeof vptr);
  const std::uint64_t shift = std::uint64_t{1} << 32;
  const Relocation plan = Relocation::plan(moved_header(now, vptr, shift), now, {}, "bench");
  std::vector<std::uint64_t> words(bytes / 8);
  std::mt19937_64 random(3);
  for (const bool pointers : {false, true}) {
    std::generate(words.begin(), words.end(), random);
    if (pointers) {
      for (std::size_t i = 0; i < words.size(); i += 8) words[i] = vptr - shift;
    }
    const double gib = static_cast<double>(bytes) / (1u << 30);
    auto t0 = Clock::now();
    ProgramScan scan(now);
    scan.scan(reinterpret_cast<std::uintptr_t>(words.data()), bytes);
    const double scanned = seconds_since(t0);
    t0 = Clock::now();
    plan.apply(reinterpret_cast<std::uintptr_t>(words.data()), bytes);
    const double relocated = seconds_since(t0);
    std::printf("%-34s scan %.3f s/GiB (%.1f GiB/s), relocate %.3f s/GiB (%.1f GiB/s)\n",
                pointers ? "a vtable pointer every 64 bytes:" : "no pointers:", scanned / gib, gib / scanned,
                relocated / gib, gib / relocated);
  }
}

void restore_for_scale(std::size_t bytes) {
  reheap::HeapPtr heap = reheap::Heap::create();
  {
    reheap::HeapScope scope(*heap);
    for (std::size_t done = 0; done < bytes; done += sizeof(Polymorphic)) new Polymorphic;
  }
  std::vector<unsigned char> file;
  reheap::VectorSink sink(file);
  auto t0 = Clock::now();
  reheap::Snapshotter(*heap, reheap::WriteTracking::kOff).write(sink);
  const double saved = seconds_since(t0);
  heap.reset();
  reheap::MemorySource source(file.data(), file.size());
  t0 = Clock::now();
  heap = reheap::restore(source);
  const double restored = seconds_since(t0);
  const double gib = static_cast<double>(bytes) / (1u << 30);
  std::printf("for scale, a heap of 64-byte polymorphic objects: save to memory %.3f s/GiB (scan included), "
              "restore from memory %.3f s/GiB (nothing to relocate)\n",
              saved / gib, restored / gib);
}

}  // namespace

int main(int argc, char** argv) {
  const double gib = argc > 1 ? std::atof(argv[1]) : 1.0;
  const auto bytes = static_cast<std::size_t>(gib * (1u << 30)) & ~std::size_t{4095};
  const reheap::ProgramLayout layout = reheap::current_program_layout();
  false_positives(layout, bytes / 8);
  scan_and_relocate(layout, bytes);
  restore_for_scale(bytes);
  return 0;
}
