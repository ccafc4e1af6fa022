// restore_check_bench: what restore's allocator-state check (heap/src/snapshot/state_check.cpp)
// costs. The check walks every free list, page table and bin of the restored heap, so its worst
// case is a heap whose memory is all small free blocks. Three heaps of the same size are saved
// into memory and restored, alternating, several times:
//   live    - 64-byte blocks, all live (free lists empty: the check reads chunk headers only)
//   freed   - the same blocks, all freed (the check follows one link per block)
//   runs    - 64 KiB page runs, every other one freed (page tables and bins)
// Build the same file against another revision of the library to compare (see README.md here).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "reheap/byte_stream.h"
#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<unsigned char> saved(const char* shape, std::size_t bytes) {
  reheap::HeapPtr heap = reheap::Heap::create();
  std::vector<void*> blocks;
  const std::string kind = shape;
  const std::size_t size = kind == "runs" ? 65536 : 64;
  blocks.reserve(bytes / size);
  for (std::size_t done = 0; done < bytes; done += size) {
    void* p = heap->allocate(size);
    std::memset(p, 0x11, size);
    blocks.push_back(p);
  }
  if (kind == "freed") {
    for (void* p : blocks) heap->deallocate(p);
  } else if (kind == "runs") {
    for (std::size_t i = 0; i < blocks.size(); i += 2) heap->deallocate(blocks[i]);
  }
  std::vector<unsigned char> file;
  reheap::VectorSink sink(file);
  reheap::Snapshotter(*heap, reheap::WriteTracking::kOff).write(sink);
  return file;
}

double restore_seconds(const std::vector<unsigned char>& file) {
  reheap::MemorySource source(file.data(), file.size());
  reheap::RestoreOptions options;
  options.layout = reheap::LayoutCheck::kNone;
  const auto t0 = Clock::now();
  reheap::HeapPtr heap = reheap::restore(source, options);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  heap.reset();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1024;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  reheap::HeapScope system(nullptr);
  const char* shapes[] = {"live", "freed", "runs"};
  std::vector<std::vector<unsigned char>> files;
  for (const char* shape : shapes) files.push_back(saved(shape, mib << 20));
  std::vector<double> times[3];
  for (int r = 0; r < reps; ++r) {
    for (int k = 0; k < 3; ++k) {
      const int i = (k + r) % 3;  // rotate the order
      times[i].push_back(restore_seconds(files[static_cast<std::size_t>(i)]));
    }
  }
  std::printf("restore from memory, %zu MiB heaps, %d repetitions (median, min..max seconds)\n", mib, reps);
  for (int i = 0; i < 3; ++i) {
    std::sort(times[i].begin(), times[i].end());
    std::printf("  %-6s %8.3f  %.3f..%.3f  (file %.0f MiB)\n", shapes[i], times[i][times[i].size() / 2],
                times[i].front(), times[i].back(), static_cast<double>(files[static_cast<std::size_t>(i)].size()) / (1 << 20));
  }
  return 0;
}
