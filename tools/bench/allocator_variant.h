// The allocator under test: the one part of a benchmark executable that differs between them.
//
// The workload (alloc_workload.cpp and the files it uses) is compiled once into an object library
// and linked unchanged into every executable, so every allocator runs the same machine code and
// is reached through the same C++ entry points, ::operator new and the sized ::operator delete.
// What an allocator is linked in for is decided by the executable's link line alone
// (CMakeLists.txt); variant_<name>.cpp supplies the functions below for it.
#pragma once

#include <string>

namespace bench {

// The name printed in results: "reheap", "glibc", "jemalloc", "tcmalloc" or "mimalloc".
const char* variant_name() noexcept;

// Proves that ::operator new and ::operator delete reach the intended allocator, by asking that
// allocator about blocks obtained through them; prints a message and aborts otherwise. Returns a
// one-line description (library and version).
std::string variant_verify();

// Calls body(ctx) with the allocator in effect. For reheap that is inside a HeapScope of a heap
// created for the call (and destroyed after it); for the others, a plain call.
using Body = void (*)(void* ctx);
void run_with_allocator(Body body, void* ctx);

// Shared by the variants: which loaded object defines `symbol` ("?" if none does).
std::string symbol_origin(const char* symbol);

// Shared by the variants: prints "alloc_bench_<name>: <why>" and aborts.
[[noreturn]] void variant_fail(const char* why);

}  // namespace bench
