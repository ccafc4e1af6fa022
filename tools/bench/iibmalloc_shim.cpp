// The one file that sees iibmalloc's headers (C++17, built only with REHEAP_IIBMALLOC_DIR; see
// CMakeLists.txt): it creates the thread's allocator and makes it the current one, which is how
// iibmalloc's own operator new (in its iibmalloc.cpp) finds it.
#include <iibmalloc.h>

extern "C" void* reheap_bench_iib_create() { return new nodecpp::iibmalloc::ThreadLocalAllocatorT; }

extern "C" void* reheap_bench_iib_set_current(void* allocator) {
  return nodecpp::iibmalloc::setCurrneAllocator(
      static_cast<nodecpp::iibmalloc::ThreadLocalAllocatorT*>(allocator));
}
