// Exactness: a restored heap's memory is, byte for byte, what the saved heap's was - every page
// of every chunk it owns, the allocator's own metadata included, zero pages zero - however the
// chain got there: blocks of every class freed and reallocated, huge blocks given back to the
// OS, chunks given back to the zone and taken again after another heap wrote to them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cases.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"
#include "support.h"

namespace reheap::snaptest {
namespace {

const std::size_t kPage = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
constexpr std::size_t kHeapStateOffset = 21 * 64 * 1024;  // SNAPSHOT_FORMAT.md, "Header"

struct Range {
  std::uintptr_t begin = 0, end = 0;
};

// The readable parts of [begin, end), from /proc/self/maps.
std::vector<Range> readable(std::uintptr_t begin, std::uintptr_t end) {
  std::vector<Range> out;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " %4s", &lo, &hi, perms) != 3) continue;
    if (perms[0] != 'r' || hi <= begin || lo >= end) continue;
    out.push_back({std::max(lo, begin), std::min(hi, end)});
  }
  return out;
}

// The non-zero pages of a heap's chunks, and which pages were readable at all.
struct Image {
  std::vector<Range> ranges;
  std::map<std::uintptr_t, std::vector<unsigned char>> pages;
};

// Reads memory through /proc/self/mem: the kernel copies it, so sanitizers do not object to
// reading the heap's free blocks, which the allocator poisons for AddressSanitizer.
void read_raw(std::uintptr_t address, unsigned char* out, std::size_t n) {
  static const int fd = ::open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::pread(fd, out, n, static_cast<off_t>(address)) != static_cast<ssize_t>(n)) {
    throw std::runtime_error("cannot read /proc/self/mem at " + std::to_string(address));
  }
}

const unsigned char* zero_page() {
  static const std::vector<unsigned char> zeros(65536, 0);
  return zeros.data();
}

Image capture(const SnapshotHeader& h) {
  Image image;
  for (const SnapshotChunk& c : h.chunks) {
    const std::uintptr_t base = h.zone_base + std::uintptr_t{c.index} * h.chunk_size;
    for (const Range& r : readable(base, base + h.chunk_size)) {
      image.ranges.push_back(r);
      std::vector<unsigned char> page(kPage);
      for (std::uintptr_t p = r.begin; p < r.end; p += kPage) {
        read_raw(p, page.data(), kPage);
        if (std::memcmp(page.data(), zero_page(), kPage) != 0) image.pages[p] = page;
      }
    }
  }
  return image;
}

// "" if the memory now holds `image`; else the pages that differ.
std::string compare(const Image& image, const SnapshotHeader& h) {
  const std::uintptr_t state_page = h.zone_base + std::uintptr_t{h.heap_id - 1} * h.chunk_size +
                                    kHeapStateOffset;
  std::ostringstream diff;
  std::size_t differing = 0;
  for (const Range& r : image.ranges) {
    const std::vector<Range> now = readable(r.begin, r.end);
    std::uintptr_t covered = r.begin;
    for (const Range& n : now) covered = n.begin <= covered ? std::max(covered, n.end) : covered;
    if (covered < r.end) {
      diff << "  [" << std::hex << r.begin << ", " << r.end << ") is no longer readable\n" << std::dec;
      ++differing;
      continue;
    }
    std::vector<unsigned char> page(kPage);
    for (std::uintptr_t p = r.begin; p < r.end; p += kPage) {
      const auto it = image.pages.find(p);
      const unsigned char* expected = it == image.pages.end() ? zero_page() : it->second.data();
      read_raw(p, page.data(), kPage);
      if (std::memcmp(page.data(), expected, kPage) == 0) continue;
      if (differing++ < 10) {
        std::size_t first = 0;
        while (page[first] == expected[first]) ++first;
        diff << "  page 0x" << std::hex << p << " (chunk " << std::dec << (p - h.zone_base) / h.chunk_size
             << ", offset 0x" << std::hex << (p - h.zone_base) % h.chunk_size << ")" << std::dec
             << (p == state_page ? " [the heap's state page]" : "")
             << (it == image.pages.end() ? " should be zero" : " differs") << " from byte " << first
             << "\n";
      }
    }
  }
  if (differing == 0) return "";
  return std::to_string(differing) + " pages differ:\n" + diff.str();
}

// Another heap that takes whatever chunks are free, writes to them and gives them back.
void interfere(std::uint64_t seed) {
  HeapPtr other = Heap::create();
  HeapScope scope(*other);
  for (std::size_t n : {std::size_t{5} << 20, std::size_t{300} << 10}) {
    auto* p = new unsigned char[n];
    fill_words(p, n, seed);
  }
}

TEST(SnapshotMemory, RestoredChainIsByteIdenticalToTheSavedHeap) {
  const Case& c = find_case("gens");
  TempDir dir;
  constexpr std::size_t kSteps = 12;  // step 10 frees every huge block
  std::vector<std::filesystem::path> files;
  std::uint64_t digest = 0;
  Image image;
  SnapshotHeader last;
  {
    Zone::purge_heap_cache();  // a fresh chunk (see RestoredFullSnapshotIsByteIdenticalToTheSavedHeap)
    HeapPtr heap = Heap::create();
    build_in(*heap, c, 71);
    {
      Snapshotter snapshotter(*heap);
      files.push_back(dir / "g0.snap");
      snapshotter.save(files.back());
      for (std::size_t g = 1; g <= kSteps; ++g) {
        mutate_in(*heap, c, g);
        interfere(g);
        files.push_back(dir / (std::string("g").append(std::to_string(g)).append(".snap")));
        snapshotter.save_increment(files.back());
      }
    }
    digest = digest_of(*heap, c);
    last = read_snapshot_header(files.back());
    image = capture(last);
  }
  ASSERT_FALSE(image.pages.empty());
  {
    HeapPtr heap = restore(files.back());
    EXPECT_EQ(digest_of(*heap, c), digest);
    EXPECT_EQ(compare(image, last), "") << "restoring the chain of " << files.size() << " files";
  }
  const auto compacted = dir / "compact.snap";
  compact(files.back(), compacted);
  HeapPtr heap = restore(compacted);
  EXPECT_EQ(compare(image, last), "") << "restoring the compacted chain";
}

TEST(SnapshotMemory, RestoredFullSnapshotIsByteIdenticalToTheSavedHeap) {
  TempDir dir;
  for (const char* name : {"huge", "poly", "graph"}) {
    SCOPED_TRACE(name);
    const Case& c = find_case(name);
    Image image;
    SnapshotHeader header;
    {
      // A fresh chunk: capture() reads every page of the heap's chunks, and a recycled chunk may
      // still hold, beyond the heap's windows, pages of its previous heap that the heap never
      // hands out and its snapshot rightly omits (zone.h, "Recycling"; heap_cache_test.cpp).
      Zone::purge_heap_cache();
      HeapPtr heap = Heap::create();
      build_in(*heap, c, 72);
      mutate_in(*heap, c, 1);
      Snapshotter(*heap).save(dir / "full.snap");
      header = read_snapshot_header(dir / "full.snap");
      image = capture(header);
    }
    HeapPtr heap = restore(dir / "full.snap");
    EXPECT_EQ(compare(image, header), "");
    // The comparison itself notices a single changed bit.
    auto* probe = static_cast<unsigned char*>(heap->root());
    *probe ^= 1;
    EXPECT_NE(compare(image, header), "");
    *probe ^= 1;
  }
}

}  // namespace
}  // namespace reheap::snaptest
