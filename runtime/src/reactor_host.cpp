// HostScope: the thread's current host and reactor (see reactor_host.h).
#include "reheap/reactor_host.h"

namespace reheap {
namespace {
constinit thread_local ReactorHost* t_host = nullptr;
constinit thread_local Reactor* t_reactor = nullptr;
}  // namespace

HostScope::HostScope(ReactorHost* host, Reactor* reactor) noexcept
    : previous_host_(t_host), previous_reactor_(t_reactor) {
  t_host = host;
  t_reactor = reactor;
}

HostScope::~HostScope() {
  t_host = previous_host_;
  t_reactor = previous_reactor_;
}

ReactorHost* HostScope::of(const Reactor* reactor) noexcept {
  return t_reactor == reactor ? t_host : nullptr;
}

}  // namespace reheap
