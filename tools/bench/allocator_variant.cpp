#include "allocator_variant.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace bench {

std::string symbol_origin(const char* symbol) {
  void* address = dlsym(RTLD_DEFAULT, symbol);
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "?";
  return info.dli_fname;
}

void variant_fail(const char* why) {
  std::fprintf(stderr, "alloc_bench_%s: %s\n", variant_name(), why);
  std::fflush(stderr);
  std::abort();
}

}  // namespace bench
