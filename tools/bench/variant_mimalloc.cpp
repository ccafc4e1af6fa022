// mimalloc, linked as a shared library built to override: it replaces malloc and operator new
// for the process.
#include <mimalloc.h>

#include <new>
#include <string>

#include "allocator_variant.h"

namespace bench {

const char* variant_name() noexcept { return "mimalloc"; }

std::string variant_verify() {
  const int version = mi_version();
  for (const std::size_t size : {std::size_t{16}, std::size_t{4096}, std::size_t{600'000}}) {
    void* p = ::operator new(size);
    const bool owned = mi_is_in_heap_region(p);
    ::operator delete(p, size);
    if (!owned) variant_fail("::operator new does not allocate from mimalloc");
  }
  return "mimalloc " + std::to_string(version / 100) + "." + std::to_string(version / 10 % 10) +
         "." + std::to_string(version % 10);
}

void run_with_allocator(Body body, void* ctx) { body(ctx); }

}  // namespace bench
