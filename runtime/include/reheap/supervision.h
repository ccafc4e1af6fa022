// Failures of reactors, as reported to supervisors (see spawn_options.h for the policies).
#pragma once

#include <cstdint>
#include <string>

#include <msgpack.hpp>

#include "reheap/actor_ref.h"

namespace reheap {

enum class FailureKind : std::uint8_t {
  kException,      // a handler threw
  kOutOfMemory,    // a handler threw std::bad_alloc (the heap's limit, or the zone, is exhausted)
  kRestoreFailed,  // a restart could not restore the reactor's snapshot
};

enum class FailureAction : std::uint8_t { kStopped, kRestarted };

// Delivered to RuntimeConfig::on_failure (on the failing reactor's worker thread, with no heap
// current) and, as a message, to SpawnOptions::supervisor. to_string(ReactorFailed) says it all
// in one line.
struct ReactorFailed {
  ActorRef reactor;
  std::string name;
  std::string what;        // the exception's what(), or a description
  std::string handler;     // "on_message", "on_timer", ...
  std::uint8_t kind = 0;   // FailureKind
  std::uint8_t action = 0; // FailureAction
  std::uint32_t restarts = 0;
  std::string reactor_type;    // the reactor's C++ type ("chat::Room")
  std::string exception_type;  // the thrown exception's C++ type ("std::out_of_range"), if any
  // kRestarted: how it came back - "exact" (its recording replayed: nothing lost) or from which
  // snapshot, and why not exactly (spawn_options.h, "Supervision").
  std::string restart;
  MSGPACK_DEFINE(reactor, name, what, handler, kind, action, restarts, reactor_type, exception_type, restart)

  FailureKind failure_kind() const noexcept { return static_cast<FailureKind>(kind); }
  FailureAction failure_action() const noexcept { return static_cast<FailureAction>(action); }
};

const char* to_string(FailureKind k) noexcept;
const char* to_string(FailureAction a) noexcept;
// "reactor 1099528404993 (chat::Room \"lobby\") failed in on_message: std::out_of_range:
// unordered_map::at; restarted (exact)".
std::string to_string(const ReactorFailed& failure);

}  // namespace reheap
