// Pointers from a heap into the program, and how a restore in another binary relocates them.
//
// A heap's words that point into itself stay valid after a restore because the heap comes back at
// the same addresses. Words that point into the program - a vtable pointer, a function pointer or
// std::function manager, a string literal, a type_info, a static - are valid only where the same
// code is loaded at the same address: the same binary, the same libraries, ASLR off. A snapshot
// therefore lists every such word's value as a ProgramRef, and restore maps each one to the
// restoring program's address of the same thing.
//
// How words are found: a conservative scan of every page the snapshot writes. A word is a program
// pointer when its value lies inside a mapped segment (PT_LOAD) of a loaded object; a heap has no
// other way to hold such a value short of an integer that happens to equal one (a random 64-bit
// word does so with probability image bytes / 2^64, about 1e-12 for a 10 MiB program; the
// benchmark tools/bench/relocation_bench.cpp measures it). Each distinct value is then resolved,
// at save time, against the object's ELF symbol table (.symtab, else .dynsym, else the debug file
// under /usr/lib/debug/.build-id):
//   - kSymbol: the value is a function's first byte (function pointers, std::function managers,
//     coroutine resume points) or lies inside an object symbol, one past its end included (a
//     vtable + 16, a type_info, a static). The symbol's name, size and, for a local symbol, the
//     source file its symbol table names are recorded.
//   - kString: no symbol covers it and it lies in a read-only data segment: a string literal. Its
//     bytes up to the NUL are recorded.
//   - kUnresolved: anything else (the middle of a function, an anonymous static, a literal with no
//     NUL): kept with the reason. Restore can still move it by a load address, never by symbol.
//
// At restore (LayoutCheck::kRelocate), each object the saved heap points into is matched with an
// object loaded now - the main executable with the main executable, a library by build-id, else by
// file name - and every word is rewritten:
//   - same build-id: the value moves by the difference of the load addresses (ASLR, another
//     process). Exact for every kind.
//   - main executable of another build (a rebuilt service, a test binary linking the service's
//     code): by symbol. The symbol must exist once and be of the same kind, and an object symbol
//     must have the same size (a vtable that grew means the class changed; a function's size is
//     its code's, which a rebuild may change); a string literal must exist with the same
//     bytes (which copy is used does not matter: literals have no identity in C++). Anything
//     else - a missing or ambiguous symbol, a changed size, an unresolved word - refuses the
//     restore (kLayoutMismatch) naming each by its demangled name, never guessed.
//   - a shared library of another build (a different libstdc++, say): refused, naming the
//     library and what points into it, unless RestoreOptions::relink_libraries allows symbols.
//   - an object not loaded now: refused, naming it.
// Objects the heap does not point into may differ freely. Relocation rewrites only the restored
// pages, so a heap that was relocated no longer matches its file: the first save after it is full
// (SnapshotInfo::fallback_reason says so).
//
// What relocation cannot see: the layout of the heap's data. A rebuild that adds a field to a
// class, or changes a std type's layout, keeps every symbol and size relocation checks (unless
// the class's vtable changed) and the restored objects are then read with the wrong layout:
// relocation makes a snapshot portable across builds whose types are the same, not across
// schema changes. And the scan cannot tell a stale word in freed memory from a live one: an
// unresolved value left in a free block refuses a restore into another build like a live one.
#pragma once

#include <cstdint>
#include <string>

namespace reheap {

enum class ProgramRefKind : std::uint8_t { kSymbol = 0, kString = 1, kUnresolved = 2 };

struct ProgramRef {
  std::uint64_t value = 0;   // the word, as the saving process held it
  std::uint32_t object = 0;  // index into the snapshot's layout
  ProgramRefKind kind = ProgramRefKind::kUnresolved;
  std::string symbol;        // kSymbol: the mangled name; kUnresolved: why it is not resolved
  std::string file;          // kSymbol, local symbols: the source file; "" for global symbols
  bool function = false;     // kSymbol: a function (else data)
  std::uint64_t size = 0;    // kSymbol: the symbol's size
  std::uint64_t offset = 0;  // kSymbol: value - symbol address
  std::string bytes;         // kString: the literal, its NUL included
  std::uint64_t words = 0;   // how many words of the saved pages hold this value
};

}  // namespace reheap
