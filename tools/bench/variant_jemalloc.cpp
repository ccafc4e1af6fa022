// jemalloc, linked as a shared library: it replaces malloc and operator new for the process.
#include <jemalloc/jemalloc.h>

#include <cstdint>
#include <new>
#include <string>

#include "allocator_variant.h"

namespace bench {
namespace {

// jemalloc counts, per thread, the bytes it has handed out; the count grows only if the block
// came from jemalloc.
std::uint64_t thread_allocated() {
  std::uint64_t value = 0;
  std::size_t len = sizeof(value);
  if (mallctl("thread.allocated", &value, &len, nullptr, 0) != 0) {
    variant_fail("mallctl(\"thread.allocated\") failed (jemalloc built without stats?)");
  }
  return value;
}

}  // namespace

const char* variant_name() noexcept { return "jemalloc"; }

std::string variant_verify() {
  const char* version = nullptr;
  std::size_t len = sizeof(version);
  if (mallctl("version", &version, &len, nullptr, 0) != 0 || version == nullptr) {
    variant_fail("mallctl(\"version\") failed: jemalloc is not in use");
  }
  for (const std::size_t size : {std::size_t{16}, std::size_t{4096}, std::size_t{600'000}}) {
    const std::uint64_t before = thread_allocated();
    void* p = ::operator new(size);
    const std::uint64_t after = thread_allocated();
    ::operator delete(p, size);
    if (after - before < size) variant_fail("::operator new does not allocate from jemalloc");
  }
  return std::string("jemalloc ") + version;
}

void run_with_allocator(Body body, void* ctx) { body(ctx); }

}  // namespace bench
