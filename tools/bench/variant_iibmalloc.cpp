// iibmalloc, the per-(Re)Actor allocator of seed 002, linked statically from a checkout outside
// the repository (REHEAP_IIBMALLOC_DIR). It replaces operator new and delete; they serve from the
// thread's current iibmalloc allocator, and from malloc when there is none. The allocator is
// created with malloc (outside every scope) and made current for the run, as a (Re)Actor's
// infrastructure would before calling react().
#include <cstdlib>
#include <new>
#include <string>

#include "allocator_variant.h"

extern "C" void* reheap_bench_iib_create();
extern "C" void* reheap_bench_iib_set_current(void* allocator);

namespace bench {

const char* variant_name() noexcept { return "iibmalloc"; }

std::string variant_verify() {
  // operator new must be iibmalloc's (linked into this executable), not libstdc++'s.
  const std::string from = symbol_origin("_Znwm");
  if (from.find("libstdc++") != std::string::npos) variant_fail("::operator new is libstdc++'s");
  return "iibmalloc (static, IibAllocatorBase as the thread's current allocator; operator new from " +
         from + ")";
}

void run_with_allocator(Body body, void* ctx) {
  void* allocator = reheap_bench_iib_create();
  void* before = reheap_bench_iib_set_current(allocator);
  body(ctx);
  reheap_bench_iib_set_current(before);
}

}  // namespace bench
