#include "stale_access.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "reheap/internal/signal_chain.h"
#include "zone_impl.h"

namespace reheap::detail {
namespace {

struct sigaction g_previous;
std::atomic<bool> g_installed{false};

void on_segv(int signal, siginfo_t* info, void* context) {
  const auto a = reinterpret_cast<std::uintptr_t>(info->si_addr);
  if (info->si_code > 0 && g_zone.base.load(std::memory_order_relaxed) != 0 && ZoneImpl::contains(a)) {
    const HeapId entry = ZoneImpl::owner_of(a);
    if ((entry & kTombstone) != 0) {
      const HeapId id = entry & ~kTombstone;
      SignalText<320>()
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
          .write_line(STDERR_FILENO);
    }
  }
  forward_signal(g_previous, signal, info, context);
}

}  // namespace

}  // namespace reheap::detail

namespace reheap {

const struct sigaction* reheap_handler_hands_on_to(const struct sigaction& action) noexcept {
  if ((action.sa_flags & SA_SIGINFO) != 0 && action.sa_sigaction == &detail::on_segv) return &detail::g_previous;
  return nullptr;
}

}  // namespace reheap

namespace reheap::detail {

void install_stale_access_report() noexcept {
  if (g_installed.exchange(true)) return;
  struct sigaction action {};
  action.sa_sigaction = on_segv;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGSEGV, &action, &g_previous);
}

}  // namespace reheap::detail
