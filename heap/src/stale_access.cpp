#include "stale_access.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "zone_impl.h"

namespace reheap::detail {
namespace {

struct sigaction g_previous;
std::atomic<bool> g_installed{false};

// Async-signal-safe formatting: no stdio in a signal handler.
class Line {
 public:
  Line& text(const char* s) noexcept {
    while (*s != '\0' && used_ + 1 < sizeof buffer_) buffer_[used_++] = *s++;
    return *this;
  }
  Line& number(std::uint64_t v, unsigned base) noexcept {
    char digits[24];
    int n = 0;
    do {
      digits[n++] = "0123456789abcdef"[v % base];
      v /= base;
    } while (v != 0);
    if (base == 16) text("0x");
    while (n > 0 && used_ + 1 < sizeof buffer_) buffer_[used_++] = digits[--n];
    return *this;
  }
  void write() noexcept {
    buffer_[used_++] = '\n';
    [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, buffer_, used_);
  }

 private:
  char buffer_[320];
  std::size_t used_ = 0;
};

void forward(int signal, siginfo_t* info, void* context) noexcept {
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(signal, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(signal);
  } else {
    // The default action: put it back; returning re-runs the faulting access, which then ends
    // the process with SIGSEGV as it would have without us. A signal that was sent (kill,
    // raise: si_code <= 0) re-runs nothing, so it is sent again.
    ::sigaction(SIGSEGV, &g_previous, nullptr);
    if (info->si_code <= 0) ::raise(signal);
  }
}

void on_segv(int signal, siginfo_t* info, void* context) {
  const auto a = reinterpret_cast<std::uintptr_t>(info->si_addr);
  if (info->si_code > 0 && g_zone.base.load(std::memory_order_relaxed) != 0 && ZoneImpl::contains(a)) {
    const HeapId entry = ZoneImpl::owner_of(a);
    if ((entry & kTombstone) != 0) {
      const HeapId id = entry & ~kTombstone;
      Line()
          .text("reheap: access to ")
          .number(a, 16)
          .text(" through a stale pointer: the address belongs to heap ")
          .number(id, 10)
          .text(" (first chunk ")
          .number(first_chunk_of(id), 10)
          .text(", generation ")
          .number(generation_of(id), 10)
          .text("), which gave this memory back (the heap was destroyed, or this was a freed "
                "huge block); nothing may use a heap's objects after its destruction")
          .write();
    }
  }
  forward(signal, info, context);
}

}  // namespace

void install_stale_access_report() noexcept {
  if (g_installed.exchange(true)) return;
  struct sigaction action {};
  action.sa_sigaction = on_segv;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGSEGV, &action, &g_previous);
}

}  // namespace reheap::detail
