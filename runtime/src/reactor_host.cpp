// HostScope: the thread's current host and reactor (see reactor_host.h).
#include "reheap/reactor_host.h"

namespace reheap {
namespace {
// Initial-exec: the library is built position-independent, where the default TLS model makes
// every access a __tls_get_addr call, twice per event and once per operation (11% of a oneway
// message measured). The library is linked into executables, whose static TLS block has room.
constinit thread_local ReactorHost* t_host [[gnu::tls_model("initial-exec")]] = nullptr;
constinit thread_local const Reactor* t_reactor [[gnu::tls_model("initial-exec")]] = nullptr;
}  // namespace

HostScope::HostScope(ReactorHost* host, const Reactor* reactor) noexcept
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
