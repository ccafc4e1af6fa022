// ReactorFailure: what the test kit reports when a reactor's hook throws.
//
// On a worker a throwing hook becomes a supervision Failure; on a test's thread it becomes this
// exception, thrown to the test or collected (TestRuntime's FailurePolicy). It carries copies of
// what the original exception said, never the exception itself: that object may have been built
// with the reactor's heap current, and only that heap may free it, so the test kit lets it go
// inside the reactor's heap scope and reports a copy made in the system heap.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "reheap/actor_ref.h"

namespace reheap::testing {

class ReactorFailure : public std::runtime_error {
 public:
  ReactorFailure(ActorRef reactor, std::string hook, const std::string& what)
      : std::runtime_error("reactor " + std::to_string(reactor.value()) + " failed in " + hook + ": " + what),
        reactor_(reactor),
        hook_(std::move(hook)),
        what_(what) {}
  ActorRef reactor() const noexcept { return reactor_; }
  const std::string& hook() const noexcept { return hook_; }         // "on_message", ...
  const std::string& exception() const noexcept { return what_; }  // the exception's what()

 private:
  ActorRef reactor_;
  std::string hook_;
  std::string what_;
};

}  // namespace reheap::testing
