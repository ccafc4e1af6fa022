// Fatal signals during a recorded reactor's event: a crash bundle even when the failing event
// does not throw but ends the process (a null pointer, a stack overflow, abort(), a division by
// zero).
//
// A hook that throws is caught by the runtime, which writes the crash bundle from ordinary code
// (recorder.cpp). A fatal signal leaves no such chance: the process is about to die, its heap
// may be in any state, and the handler may only make async-signal-safe calls (write, mkdir,
// link, open; no allocation, no locks, no stdio). So each recorder keeps ready, in process
// memory, everything a bundle needs but the failure itself (paths, the manifest's fixed parts),
// and while one of its events runs it is the thread's witness: the handler asks it to write the
// bundle, then hands the signal on to the handler installed before (the default action, a
// sanitizer's, the program's own), so the process still dies as it would have.
//
// The program's own handler may repair a fault (a guard page it maps, then returns) and the
// program go on: that is no crash. So when the handler before ours is the program's, it runs
// first, and a bundle is written only if the same fault comes back in the same event (the
// handler did not repair it), or once the handler had SA_RESETHAND (its first call sends the
// next fault to the default action, which reheap emulates, since it calls the handler itself).
// A handler the program installs after ours replaces it: no bundles then. When one thread writes
// a bundle and another faults, the one handing on to a fatal action waits up to 2 s for it.
//
// Whenever a fatal signal is about to end the process (its next handler is the default action or
// a sanitizer's report, or the program's own handler let the fault come back), every other
// recorded reactor's log is written up to its last whole event first, and every ring recording
// with a directory is written out (fatal_flush.h), whether or not a recorded reactor's event
// faulted.
//
// Installed once per process, by the first recorder: SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT.
// Runs on the alternate signal stack, which each worker thread gets (so that a stack overflow
// is caught too).
#pragma once

#include <signal.h>

#include <cstddef>
#include <cstdint>

#include "recording/fatal_flush.h"
#include "reheap/internal/signal_chain.h"

namespace reheap::detail::recording {

class FatalSignalWitness {
 public:
  // In the signal handler: writes the bundle of the event under way. Async-signal-safe.
  virtual void on_fatal_signal(int signal, const siginfo_t& info) noexcept = 0;
  // In the signal handler: the index of the event under way.
  virtual std::uint64_t fatal_event() const noexcept = 0;
  // Its recorder's slot among those every fatal signal flushes (fatal_flush.h): the bundle holds
  // its log, so the flush of the others leaves it out.
  virtual const FatalFlushSlot* fatal_flush_slot() const noexcept = 0;

 protected:
  ~FatalSignalWitness() = default;
};

// Idempotent; any thread.
void install_fatal_signal_handlers() noexcept;
// The witness of the event the calling thread runs now, or null between events.
void set_fatal_signal_witness(FatalSignalWitness* witness) noexcept;
// Gives the calling thread an alternate signal stack unless it has one; freed at thread exit.
void ensure_alternate_signal_stack() noexcept;

using reheap::SignalText;
// A SignalText size for a path and a little more.
inline constexpr std::size_t kPathText = 4096 + 64;

// The signal's name ("SIGSEGV") and what it means ("segmentation fault").
const char* signal_name(int signal) noexcept;
const char* signal_meaning(int signal) noexcept;

}  // namespace reheap::detail::recording
