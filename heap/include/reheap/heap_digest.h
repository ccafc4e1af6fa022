// A heap's state as one number: a 64-bit digest of the bytes of every page the heap may have
// written (the pages a snapshot would hold).
//
// Two heaps with equal digests almost surely hold the same state, so a replay compares the digest
// of the replayed heap with the one recorded after the same event and learns where the two runs
// first departed (reheap/recording.h).
//
// state_digest is the one recordings take (format version 5 on). It does not depend on where the
// program is loaded: a word of the heap that points into a loaded segment of the program (a
// vtable, a function pointer, a string literal, a static) is hashed as the name of what it points
// to - the symbol and the offset into it, a literal's bytes - as a snapshot names such words for
// relocation (reheap/program_refs.h). So the heap restored and relocated in another binary (a test
// linking the recorded code) has the digest the recording process saw. What is left of such a
// pointer when a 4-byte field overwrote its lower half (a reused block, padding) keeps the upper
// half of an address in the program, which is made relative to its object's load address too.
// Heap addresses stay in it: a restored heap lies where the recorded one did.
//
// Limits: a remnant of fewer than 4 bytes of a program pointer (its lower half, or 1-3 bytes of
// it) still differs between processes; so does the upper-half remnant of a pointer into a shared
// library that another set of libraries lays out differently (a test binary linking other ones).
//
// used_pages_digest is the older definition (format versions 1 to 4): the raw bytes, comparable
// only where the program lies where the recording's did.
//
// Both walk every used page, so their cost grows with the heap, not with what the last event
// changed. state_digest is a sum of per-page hashes, so that a caller that knows which pages were
// written since the last digest could update it page by page; nothing does so yet.
#pragma once

#include <cstdint>

#include "reheap/heap.h"
#include "reheap/program_layout.h"
#include "reheap/program_refs.h"

namespace reheap {

// The sum of XXH3-64 hashes of the heap's used pages (each seeded with its address, its program
// pointers named), mixed with the page count. Call it between two uses of the heap (no thread may
// allocate in it meanwhile).
std::uint64_t state_digest(const Heap& heap);

// What state_digest hashes in place of a word that points into the program (`ref`, resolved in
// `layout`), the same in every binary that holds the same thing: a symbol by its name (and source
// file, for a local one) and the offset into it; a string literal by its bytes; anything else by
// its object's build-id (or path; nothing for the main executable) and its offset from the load
// address, which only the same build of that object reproduces. A snapshot's header lists its
// program pointers resolved (SnapshotHeader::program_refs), so its words can be named too.
std::uint64_t program_ref_name(const ProgramRef& ref, const ProgramLayout& layout);

// XXH3-64 over the heap's used page ranges, in address order, each range's address included.
// Call it between two uses of the heap.
std::uint64_t used_pages_digest(const Heap& heap);

}  // namespace reheap
