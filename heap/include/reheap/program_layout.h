// The program's layout: which executable and shared objects are loaded, and where.
//
// A heap restored at the same addresses keeps its pointers into itself valid, but pointers from
// the heap into the program (vtables, function pointers, string literals, type_info, statics) are
// valid only where the restoring process loaded the same code at the same addresses. A snapshot
// records the saving process's layout (each object's file, build-id, load address and mapped
// segments) and the pointers into it that its pages hold (program_refs.h); restore relocates
// those pointers to the current layout (LayoutCheck::kRelocate, the default) or, with the stricter
// checks below, refuses any difference (SnapshotErrc::kLayoutMismatch) saying what differs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace reheap {

// One PT_LOAD segment as mapped: [begin, end) in the process.
struct ImageSegment {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
  bool writable = false;
  bool executable = false;
};

struct LoadedObject {
  std::string path;        // absolute path of the file ("" only if the loader gave none)
  std::uintptr_t base = 0; // load bias (dl_iterate_phdr's dlpi_addr)
  std::string build_id;    // lowercase hex of the GNU build-id note, "" if the file has none
  bool main_executable = false;
  std::vector<ImageSegment> segments;  // ascending; empty in snapshots of older writers
};

// The main executable first, then shared objects in load order. The vDSO is left out: the
// kernel places it, and a heap never needs to point into it.
using ProgramLayout = std::vector<LoadedObject>;

ProgramLayout current_program_layout();

enum class LayoutCheck {
  // Relocate the heap's pointers into the program to where the same code is now: by load
  // address for an object of the same build, by symbol for a main executable of another build
  // (program_refs.h says how, and what is refused). Objects the heap does not point into may
  // differ freely.
  kRelocate,
  kStrict,          // every object of the saved layout: same build-id, same load address
  kExecutableOnly,  // only the main executable; the heap must not point into shared libraries
  kNone,            // no check: pointers into the program may be wrong after restore
};

// What keeps a heap saved under `saved` from being restored under `now` with `check`: one line
// per difference (an object missing, of another build-id, at another address), each naming the
// object ("the main executable server: ...", "libfoo.so.1: ..."), without a trailing newline.
// Empty when the restore may go ahead, and always for kRelocate and kNone. Objects loaded now but
// not then do not matter. Objects are matched by build-id when both have one, by path otherwise.
// For a caller with advice of its own (a replay, which relocates anyway).
std::vector<std::string> layout_mismatches(const ProgramLayout& saved, const ProgramLayout& now,
                                           LayoutCheck check);

// The refusal a restore gives: "" when layout_mismatches() finds nothing; otherwise its lines,
// each ended by a newline, then a last line saying how to restore anyway (kRelocate, or the same
// binary with ASLR off).
std::string layout_difference(const ProgramLayout& saved, const ProgramLayout& now,
                              LayoutCheck check);

}  // namespace reheap
