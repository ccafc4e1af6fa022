// Address space layout randomisation (ASLR) and snapshots.
//
// With ASLR on, the executable, its shared libraries, the stack and mmap'ed areas land at new
// random addresses on every run, so a restored heap's pointers into the program (vtables,
// function pointers, string literals) would dangle. The zone itself is mapped at a fixed address
// and is not affected. A process restoring snapshots therefore runs with ASLR off for itself
// (personality(ADDR_NO_RANDOMIZE)), as does the process that saved them; the same binary then
// loads everything at the same addresses in both.
//
// Cost: one execve() of the program at start-up (on the order of a millisecond here, plus the
// dynamic loader's work again), and the security loss of ASLR for that process. It is needed
// only by programs whose heaps hold pointers into the program and that restore snapshots
// written by another process; RestoreOptions::layout decides what restore checks.
#pragma once

#include <string>

namespace reheap {

// True if this process runs without address randomisation.
bool aslr_disabled() noexcept;

// Call first thing in main(), before creating threads or heaps. If ASLR is on, sets
// ADDR_NO_RANDOMIZE and re-executes /proc/self/exe with the same arguments and environment; the
// new image starts main() again with ASLR off. Returns true when this process runs without ASLR
// (already off, or this is the re-executed image), false with the reason in `why` when it cannot
// be turned off (personality refused, e.g. by a seccomp filter; exec failed). It never loops:
// an environment variable (REHEAP_ASLR_REEXEC) marks the re-executed image.
bool reexec_without_aslr(int argc, char** argv, std::string* why = nullptr);

}  // namespace reheap
