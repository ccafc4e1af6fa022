// tcmalloc (gperftools, the "minimal" library without the profilers), linked as a shared
// library: it replaces malloc and operator new for the process.
#include <gperftools/malloc_extension_c.h>
#include <gperftools/tcmalloc.h>

#include <new>
#include <string>

#include "allocator_variant.h"

namespace bench {

const char* variant_name() noexcept { return "tcmalloc"; }

std::string variant_verify() {
  const char* version = tc_version(nullptr, nullptr, nullptr);
  if (version == nullptr) variant_fail("tc_version() returned nothing");
  for (const std::size_t size : {std::size_t{16}, std::size_t{4096}, std::size_t{600'000}}) {
    void* p = ::operator new(size);
    const bool owned = MallocExtension_GetOwnership(p) == MallocExtension_kOwned;
    ::operator delete(p, size);
    if (!owned) variant_fail("::operator new does not allocate from tcmalloc");
  }
  return version;
}

void run_with_allocator(Body body, void* ctx) { body(ctx); }

}  // namespace bench
