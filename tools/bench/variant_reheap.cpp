// reheap, through reheap::global_new: plain operator new/delete reach the current heap, which the
// benchmark makes a fresh heap created for each run.
#include <reheap/heap.h>
#include <reheap/heap_scope.h>

#include <new>
#include <string>

#include "allocator_variant.h"

namespace bench {
namespace {

void check_blocks_come_from(reheap::Heap& heap) {
  for (const std::size_t size : {std::size_t{16}, std::size_t{4096}, std::size_t{600'000}}) {
    void* p = ::operator new(size);
    const bool owned = reheap::Heap::owner_of(p) == &heap;
    ::operator delete(p, size);
    if (!owned) variant_fail("::operator new does not allocate from the current reheap heap");
  }
}

}  // namespace

const char* variant_name() noexcept { return "reheap"; }

std::string variant_verify() {
  auto heap = reheap::Heap::create();
  {
    reheap::HeapScope scope(*heap);
    check_blocks_come_from(*heap);
  }
  // Outside every scope, the system allocator serves: the block must not be in the zone.
  void* p = ::operator new(64);
  const bool in_zone = reheap::Heap::owner_of(p) != nullptr;
  ::operator delete(p, 64);
  if (in_zone) variant_fail("::operator new allocates from a heap outside every HeapScope");
  return "reheap (global_new, one heap, HeapScope)";
}

void run_with_allocator(Body body, void* ctx) {
  auto heap = reheap::Heap::create();
  reheap::HeapScope scope(*heap);
  check_blocks_come_from(*heap);
  body(ctx);
}

}  // namespace bench
