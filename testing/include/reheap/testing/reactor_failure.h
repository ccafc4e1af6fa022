// ReactorFailure: what the test kit reports when a reactor's hook throws.
//
// On a worker a throwing hook becomes a supervision Failure; on a test's thread it becomes this
// exception, thrown to the test or collected (TestRuntime's FailurePolicy). It names the reactor
// by its reference, its SpawnOptions name and its C++ type, the hook, and the exception by its C++
// type and what():
//   reactor 1099528404993 (chat::Room "lobby") failed in on_message: std::out_of_range: unordered_map::at
// It carries copies of what the original exception said, never the exception itself: that object
// may have been built with the reactor's heap current, and only that heap may free it, so the test
// kit lets it go inside the reactor's heap scope and reports a copy made in the system heap.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "reheap/actor_ref.h"

namespace reheap::testing {

class ReactorFailure : public std::runtime_error {
 public:
  // What is known of a failure; an empty string is a part not known (a replay, for one, does not
  // know the name a reactor was spawned with: a recording does not keep it).
  struct Details {
    ActorRef reactor;
    std::string name;            // SpawnOptions::name
    std::string reactor_type;    // the reactor's C++ type: "chat::Room"
    std::string hook;            // "on_message", ...
    std::string exception_type;  // the thrown object's C++ type: "std::out_of_range", "int"
    std::string what;            // its what(), or a sentence saying it has none
  };

  explicit ReactorFailure(Details details) : std::runtime_error(describe(details)), details_(std::move(details)) {}

  ActorRef reactor() const noexcept { return details_.reactor; }
  const std::string& name() const noexcept { return details_.name; }
  const std::string& reactor_type() const noexcept { return details_.reactor_type; }
  const std::string& hook() const noexcept { return details_.hook; }
  const std::string& exception_type() const noexcept { return details_.exception_type; }
  const std::string& exception() const noexcept { return details_.what; }  // the exception's what()

 private:
  static std::string describe(const Details& d) {
    std::string who = d.reactor_type;
    if (!d.name.empty()) who += (who.empty() ? "\"" : " \"") + d.name + "\"";
    std::string text = "reactor " + std::to_string(d.reactor.value());
    if (!who.empty()) text += " (" + who + ")";
    text += " failed in " + d.hook + ": ";
    if (!d.exception_type.empty()) text += d.exception_type + ": ";
    return text + d.what;
  }

  Details details_;
};

}  // namespace reheap::testing
