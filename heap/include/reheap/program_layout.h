// The program's layout: which executable and shared objects are loaded, and where.
//
// A heap restored at the same addresses keeps its pointers into itself valid, but pointers from
// the heap into the program (vtables, function pointers, string literals, type_info, statics) are
// valid only if the restoring process loaded the same files at the same addresses. A snapshot
// records the saving process's layout; restore compares it with the current one and refuses a
// difference (SnapshotErrc::kLayoutMismatch) with a message saying what differs. Address space
// layout randomisation (ASLR) moves every object on each run: see aslr.h for the fix.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace reheap {

struct LoadedObject {
  std::string path;        // absolute path of the file ("" only if the loader gave none)
  std::uintptr_t base = 0; // load bias (dl_iterate_phdr's dlpi_addr)
  std::string build_id;    // lowercase hex of the GNU build-id note, "" if the file has none
  bool main_executable = false;
};

// The main executable first, then shared objects in load order. The vDSO is left out: the
// kernel places it, and a heap never needs to point into it.
using ProgramLayout = std::vector<LoadedObject>;

ProgramLayout current_program_layout();

enum class LayoutCheck {
  kStrict,          // every object of the saved layout: same build-id, same load address
  kExecutableOnly,  // only the main executable; the heap must not point into shared libraries
  kNone,            // no check: pointers into the program may be wrong after restore
};

// "" when a heap saved under `saved` may be restored under `now`; otherwise a message naming
// each object that differs (missing, other build-id, other address) and how to fix it.
// Objects loaded now but not then do not matter. Objects are matched by build-id when both have
// one, by path otherwise.
std::string layout_difference(const ProgramLayout& saved, const ProgramLayout& now,
                              LayoutCheck check);

}  // namespace reheap
