// malloc/free of the allocator this executable links (MSGBENCH_NAME, expected to be defined by
// MSGBENCH_LIBRARY): glibc by default, or jemalloc, tcmalloc or mimalloc, each of which replaces
// malloc for the whole process when linked.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "message_variant.h"

namespace msgbench {
namespace {

std::string origin_of(const char* symbol) {
  void* address = dlsym(RTLD_DEFAULT, symbol);
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "?";
  return info.dli_fname;
}

}  // namespace

void* message_allocate(std::size_t size) noexcept { return std::malloc(size); }
void message_free(void* p) noexcept { std::free(p); }

const char* variant_name() noexcept { return MSGBENCH_NAME; }

std::string variant_verify() {
  const std::string origin = origin_of("malloc");
  if (origin.find(MSGBENCH_LIBRARY) == std::string::npos) {
    std::fprintf(stderr, "message_alloc_bench_%s: malloc comes from %s, not %s\n", MSGBENCH_NAME,
                 origin.c_str(), MSGBENCH_LIBRARY);
    std::abort();
  }
  void* p = message_allocate(64);
  message_free(p);
  return "malloc from " + origin;
}

}  // namespace msgbench
