// HostScope: the thread's current host and reactor (see reactor_host.h, host_slot.h).
#include "reactor/reactor_host.h"

#include "reactor/host_slot.h"

namespace reheap {

namespace detail {
constinit thread_local HostSlot t_host_slot [[gnu::tls_model("initial-exec")]];
}  // namespace detail

HostScope::HostScope(ReactorHost* host, const Reactor* reactor) noexcept
    : previous_host_(detail::t_host_slot.host), previous_reactor_(detail::t_host_slot.reactor) {
  detail::t_host_slot = detail::HostSlot{host, reactor};
}

HostScope::~HostScope() { detail::t_host_slot = detail::HostSlot{previous_host_, previous_reactor_}; }

ReactorHost* HostScope::of(const Reactor* reactor) noexcept { return detail::host_of(reactor); }

}  // namespace reheap
