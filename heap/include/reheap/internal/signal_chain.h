// Signal chaining: what a handler for a fatal signal (SIGSEGV, SIGABRT, ...) needs to add its
// report and then let the process die as it would have without it.
//
// Internal (reheap/internal/): shared by the heap and the runtime, which are built separately, so
// installed with them; not a stable API, and not for programs, which never see these names in a
// public header. Headers here may change or go with any release.
//
// reheap installs two such handlers, each only while its feature is in use: the stale-pointer
// report of checked builds (heap) and the crash bundles of recorded reactors (runtime). Each
// keeps the action installed before it and hands the signal on with forward_signal, so that the
// default action, a sanitizer's report or the program's own handler still runs last. Everything
// here is async-signal-safe: no allocation, no locks, no stdio.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

namespace reheap {

// Whether `action` runs a handler (else it is the default action or ignores the signal).
inline bool runs_handler(const struct sigaction& action) noexcept {
  return (action.sa_flags & SA_SIGINFO) != 0 ? action.sa_sigaction != nullptr
                                             : action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN;
}

// Hands `signal` on to `previous` (the action the caller's handler replaced). For the default
// action it puts that back: returning from the handler then re-runs a faulting instruction, which
// ends the process as it would have; a signal that was sent (abort, kill: si_code <= 0) re-runs
// nothing, so it is sent again, to be delivered when the handler returns. A handler with
// SA_RESETHAND is called once and `previous` becomes the default action, as the kernel would have
// made it on delivery: a handler that logs and returns would otherwise see its fault for ever.
inline void forward_signal(struct sigaction& previous, int signal, siginfo_t* info, void* context) noexcept {
  if (runs_handler(previous)) {
    const struct sigaction handler = previous;
    if ((handler.sa_flags & SA_RESETHAND) != 0) {
      previous.sa_flags = 0;
      previous.sa_handler = SIG_DFL;
    }
    if ((handler.sa_flags & SA_SIGINFO) != 0) {
      handler.sa_sigaction(signal, info, context);
    } else {
      handler.sa_handler(signal);
    }
  } else {
    ::sigaction(signal, &previous, nullptr);
    if (info->si_code <= 0) ::raise(signal);
  }
}

// reheap's own handlers that report and then hand the signal on (the stale-pointer report of
// checked builds) are transparent to a handler chained after them: this is the action `action`
// hands on to if it is one of them, else null. Async-signal-safe.
const struct sigaction* reheap_handler_hands_on_to(const struct sigaction& action) noexcept;

// A bounded text of up to N - 1 bytes built in a signal handler: appends, silently cutting what
// does not fit. It lives on the (signal) stack, so it is sized for what it holds.
template <std::size_t N>
class SignalText {
 public:
  SignalText& text(const char* s) noexcept { return text(s, std::strlen(s)); }
  SignalText& text(const char* s, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n && used_ + 1 < N; ++i) buffer_[used_++] = s[i];
    buffer_[used_] = '\0';
    return *this;
  }
  // In decimal, or with base 16 as 0x...
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
  // Writes the text and a newline to `fd` (stderr, usually) in one write(2).
  void write_line(int fd) noexcept {
    buffer_[used_] = '\n';
    [[maybe_unused]] const ssize_t ignored = ::write(fd, buffer_, used_ + 1);
    buffer_[used_] = '\0';
  }
  const char* data() const noexcept { return buffer_; }  // NUL-terminated
  std::size_t size() const noexcept { return used_; }

 private:
  char buffer_[N] = {};  // N - 1 bytes of text, and room for its NUL or newline
  std::size_t used_ = 0;
};

}  // namespace reheap
