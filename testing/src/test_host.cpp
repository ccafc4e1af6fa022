// TestHost: answers from the test's clock and seed, no sockets (see test_host.h).
#include "test_host.h"

#include <stdexcept>
#include <string>
#include <typeinfo>
#include <utility>

#include "caught_exception.h"
#include "reactor/reactor_access.h"  // runtime/src
#include "reheap/heap_scope.h"

namespace reheap::testing::detail {
namespace {

[[noreturn, gnu::cold]] void throw_no_sockets(const char* operation) {
  HeapScope system(nullptr);
  throw std::logic_error(std::string("reheap::Reactor::") + operation +
                         ": reheap::testing::TestRuntime has no sockets; feed socket events to the "
                         "reactor with TestRuntime::deliver(ref, Event) instead");
}

}  // namespace

std::optional<ReactorFailure> TestHost::deliver(Heap& heap, Reactor& reactor, ActorRef self, const std::string& name,
                                               const Event& event, ActorRef sender) {
  reactor_ = self;
  sender_ = sender;
  std::optional<ReactorFailure> failure;
  const HeapScope current(heap);
  const HostScope door(this, &reactor);
  reheap::detail::ReactorAccess::events(reactor)++;
  try {
    deliver_to(reactor, event);
  } catch (...) {
    // The exception may live in the reactor's heap: copy what it says to the system heap and let
    // it go here, while its heap is still current.
    const HeapScope system(nullptr);
    CaughtException caught = caught_exception();
    failure.emplace(ReactorFailure::Details{.reactor = self,
                                            .name = name,
                                            .reactor_type = type_name(typeid(reactor)),
                                            .hook = hook_name(event.kind),
                                            .exception_type = std::move(caught.type),
                                            .what = std::move(caught.what)});
  }
  return failure;
}

void TestHost::seed(std::uint64_t out[2]) {
  out[0] = entropy_.next();
  out[1] = entropy_.next();
}

Runtime& TestHost::runtime() {
  HeapScope system(nullptr);
  throw std::logic_error(
      "reheap::Reactor::runtime: a reactor in reheap::testing::TestRuntime has no reheap::Runtime; "
      "use the reactor's own operations (send, spawn, start_timer, ...)");
}

SocketId TestHost::listen(const std::string&, std::uint16_t, bool, int) { throw_no_sockets("listen"); }
std::uint16_t TestHost::local_port(SocketId) { throw_no_sockets("local_port"); }
SocketId TestHost::connect(const std::string&, std::uint16_t) { throw_no_sockets("connect"); }
WriteResult TestHost::write(SocketId, std::span<const char>) { throw_no_sockets("write"); }
void TestHost::close(SocketId) { throw_no_sockets("close"); }
void TestHost::set_no_delay(SocketId, bool) { throw_no_sockets("set_no_delay"); }

void TestHost::set_reading(SocketId, bool on) { throw_no_sockets(on ? "resume_reading" : "pause_reading"); }

void TestHost::set_write_high_water(SocketId, std::size_t) { throw_no_sockets("set_write_high_water"); }

}  // namespace reheap::testing::detail
