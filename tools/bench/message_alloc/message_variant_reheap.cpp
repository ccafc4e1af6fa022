// reheap's message allocator: what reactors use for the messages they send each other.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "message_variant.h"
#include "reheap/message_allocator.h"

namespace msgbench {

void* message_allocate(std::size_t size) noexcept { return reheap::MessageAllocator::allocate(size); }
void message_free(void* p) noexcept { reheap::MessageAllocator::deallocate(p); }

const char* variant_name() noexcept { return "reheap"; }

std::string variant_verify() {
  const std::size_t slabs_before = reheap::MessageAllocator::stats().slabs;
  void* p = message_allocate(64);
  const bool ours = reheap::MessageAllocator::usable_size(p) == 64 &&
                    reheap::MessageAllocator::stats().slabs >= (slabs_before == 0 ? 1 : slabs_before);
  message_free(p);
  if (!ours) {
    std::fprintf(stderr, "message_alloc_bench_reheap: blocks do not come from MessageAllocator\n");
    std::abort();
  }
  return "reheap::MessageAllocator (static library)";
}

}  // namespace msgbench
