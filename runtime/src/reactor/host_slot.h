// The thread's current host and the reactor it serves (HostScope, reactor_host.h), for the
// runtime's own hot paths: the funnel sets it around every event and every Reactor operation
// reads it, so both are inline here rather than calls into reactor_host.cpp.
#pragma once

#include "reactor/reactor_host.h"

namespace reheap::detail {

struct HostSlot {
  ReactorHost* host = nullptr;
  const Reactor* reactor = nullptr;
};

// Initial-exec: the library is built position-independent, where the default TLS model makes
// every access a __tls_get_addr call, twice per event and once per operation (11% of a oneway
// message measured). The library is linked into executables, whose static TLS block has room.
extern constinit thread_local HostSlot t_host_slot [[gnu::tls_model("initial-exec")]];

inline ReactorHost* host_of(const Reactor* reactor) noexcept {
  const HostSlot& slot = t_host_slot;
  return slot.reactor == reactor ? slot.host : nullptr;
}

// HostScope, inline.
class HostSlotScope {
 public:
  HostSlotScope(ReactorHost* host, const Reactor* reactor) noexcept : previous_(t_host_slot) {
    t_host_slot = HostSlot{host, reactor};
  }
  ~HostSlotScope() { t_host_slot = previous_; }
  HostSlotScope(const HostSlotScope&) = delete;
  HostSlotScope& operator=(const HostSlotScope&) = delete;

 private:
  HostSlot previous_;
};

}  // namespace reheap::detail
