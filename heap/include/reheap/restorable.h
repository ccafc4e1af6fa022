// REHEAP_RESTORABLE(Class): one line that keeps a class's code in a program that restores heaps
// holding its objects without ever constructing one.
//
// Why it is needed. A restored heap's objects point into the program: a polymorphic object holds
// a pointer to its class's vtable, and a reactor's handler table holds pointers to the functions
// its constructor installed. When the restoring program is not the saving one (a test binary
// replaying a recording, a rebuilt service), those pointers are mapped to the restoring program's
// symbols by name (program_refs.h), so the restoring program must contain them. The linker emits
// an inline class's vtable only where a constructor of the class is compiled, and takes a class's
// object file out of a static library only when something refers to it; a program that only reads
// the restored object (`replay.reactor<Bank>()`, a dynamic_cast) refers to neither, and restore is
// refused naming the missing "vtable for Bank".
//
// What it does. `REHEAP_RESTORABLE(Bank);` at namespace scope (in any one source file of the
// program) defines a function that constructs a Bank in place, never called, and keeps its address
// in a variable the compiler and the linker must keep (`used`, and `retain` where the toolchain
// has it, which survives --gc-sections). Compiling that constructor call is what makes the vtable,
// the virtual functions and everything the constructor installs (handle<>() thunks) part of the
// program. A class without a default constructor takes the arguments of one of its constructors,
// which are compiled but never evaluated: `REHEAP_RESTORABLE(Account, std::string(), 0);`. The
// class's name must be one macro argument: name a template specialisation through an alias.
//
// Relocation's error for a missing vtable prints the line to write (heap/src/snapshot/relocation.cpp).
#pragma once

#include <new>
#include <type_traits>

#if defined(__has_attribute)
#if __has_attribute(retain)
#define REHEAP_RESTORABLE_KEPT_ __attribute__((used, retain))
#endif
#endif
#ifndef REHEAP_RESTORABLE_KEPT_
#define REHEAP_RESTORABLE_KEPT_ __attribute__((used))
#endif

#define REHEAP_RESTORABLE_JOIN2_(a, b) a##b
#define REHEAP_RESTORABLE_JOIN_(a, b) REHEAP_RESTORABLE_JOIN2_(a, b)

// The static_assert names the misuse where it is written: a class without virtual functions has
// no vtable to keep, and its objects need no mapping of their type.
#define REHEAP_RESTORABLE(Class, ...)                                                               \
  static_assert(::std::is_polymorphic_v<Class>,                                                     \
                "REHEAP_RESTORABLE(" #Class "): the class has no virtual functions, so nothing of " \
                "it needs keeping for a restore");                                                  \
  REHEAP_RESTORABLE_KEPT_ static void* (*const volatile REHEAP_RESTORABLE_JOIN_(                    \
      reheap_restorable_, __COUNTER__))(void*) = [](void* at) -> void* {                            \
    return ::new (at) Class(__VA_ARGS__);                                                           \
  }
