// The allocator under test: the one part of a message_alloc_bench executable that differs
// between them. The workload (message_workload.cpp) is compiled once and calls these two
// functions for every message; message_variant_reheap.cpp maps them to MessageAllocator,
// message_variant_malloc.cpp to malloc/free of whichever allocator the executable links.
#pragma once

#include <cstddef>
#include <string>

namespace msgbench {

void* message_allocate(std::size_t size) noexcept;
void message_free(void* p) noexcept;

// "reheap", "glibc", "jemalloc", "tcmalloc" or "mimalloc".
const char* variant_name() noexcept;

// Checks that message_allocate reaches the intended allocator (aborts with a message if not)
// and describes it in one line.
std::string variant_verify();

}  // namespace msgbench
