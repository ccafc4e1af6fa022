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
// Installed once per process, by the first recorder: SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT.
// Runs on the alternate signal stack, which each worker thread gets (so that a stack overflow
// is caught too).
#pragma once

#include <signal.h>

#include <cstddef>
#include <cstring>

namespace reheap::detail::recording {

class FatalSignalWitness {
 public:
  // In the signal handler: writes the bundle of the event under way. Async-signal-safe.
  virtual void on_fatal_signal(int signal, const siginfo_t& info) noexcept = 0;

 protected:
  ~FatalSignalWitness() = default;
};

// Idempotent; any thread.
void install_fatal_signal_handlers() noexcept;
// The witness of the event the calling thread runs now, or null between events.
void set_fatal_signal_witness(FatalSignalWitness* witness) noexcept;
// Gives the calling thread an alternate signal stack unless it has one; freed at thread exit.
void ensure_alternate_signal_stack() noexcept;

// Async-signal-safe formatting of a bounded text of up to N - 1 bytes: appends, silently cutting
// what does not fit. On the signal stack, so sized for what it holds (kPathText: a path and more).
template <std::size_t N>
class SignalText {
 public:
  SignalText& text(const char* s) noexcept { return text(s, std::strlen(s)); }
  SignalText& text(const char* s, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n && used_ + 1 < N; ++i) buffer_[used_++] = s[i];
    buffer_[used_] = '\0';
    return *this;
  }
  SignalText& number(unsigned long long v, unsigned base = 10) noexcept {
    char digits[24];
    int n = 0;
    do {
      digits[n++] = "0123456789abcdef"[v % base];
      v /= base;
    } while (v != 0);
    if (base == 16) text("0x");
    while (n > 0) text(&digits[--n], 1);
    return *this;
  }
  // `s` as a JSON string literal (quotes, escapes).
  SignalText& json(const char* s, std::size_t n) noexcept {
    text("\"");
    for (std::size_t i = 0; i < n; ++i) {
      const auto u = static_cast<unsigned char>(s[i]);
      if (s[i] == '"' || s[i] == '\\') {
        const char escaped[2] = {'\\', s[i]};
        text(escaped, 2);
      } else if (u < 0x20) {
        const char escaped[6] = {'\\', 'u', '0', '0', "0123456789abcdef"[u >> 4], "0123456789abcdef"[u & 15]};
        text(escaped, 6);
      } else {
        text(s + i, 1);
      }
    }
    return text("\"");
  }
  const char* data() const noexcept { return buffer_; }  // NUL-terminated
  std::size_t size() const noexcept { return used_; }

 private:
  char buffer_[N] = {};
  std::size_t used_ = 0;
};
inline constexpr std::size_t kPathText = 4096 + 64;

// The signal's name ("SIGSEGV") and what it means ("segmentation fault").
const char* signal_name(int signal) noexcept;
const char* signal_meaning(int signal) noexcept;

}  // namespace reheap::detail::recording
