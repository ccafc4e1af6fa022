// glibc malloc, reached through libstdc++'s operator new: the allocator a program gets by default.
#include <dlfcn.h>
#include <gnu/libc-version.h>

#include <new>
#include <string>

#include "allocator_variant.h"

namespace bench {

const char* variant_name() noexcept { return "glibc"; }

std::string variant_verify() {
  // No other allocator may be loaded: each exports a function glibc does not have.
  for (const char* foreign : {"mallctl", "tc_version", "mi_version", "_ZN6reheap4Heap8owner_ofEPKv"}) {
    if (dlsym(RTLD_DEFAULT, foreign) != nullptr) {
      variant_fail((std::string("another allocator is loaded (it exports ") + foreign + ")").c_str());
    }
  }
  // malloc must come from libc itself, and operator new from the C++ runtime (which calls it).
  const std::string malloc_origin = symbol_origin("malloc");
  if (malloc_origin.find("libc.so") == std::string::npos) {
    variant_fail(("malloc is defined by " + malloc_origin + ", not libc").c_str());
  }
  const std::string new_origin = symbol_origin("_Znwm");
  if (new_origin.find("libstdc++") == std::string::npos) {
    variant_fail(("operator new is defined by " + new_origin + ", not libstdc++").c_str());
  }
  void* p = ::operator new(100);
  ::operator delete(p, 100);
  return std::string("glibc ") + gnu_get_libc_version();
}

void run_with_allocator(Body body, void* ctx) { body(ctx); }

}  // namespace bench
