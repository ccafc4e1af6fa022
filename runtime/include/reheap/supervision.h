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
// current) and, as a message, to SpawnOptions::supervisor.
struct ReactorFailed {
  ActorRef reactor;
  std::string name;
  std::string what;        // the exception's what(), or a description
  std::string handler;     // "on_message", "on_timer", ...
  std::uint8_t kind = 0;   // FailureKind
  std::uint8_t action = 0; // FailureAction
  std::uint32_t restarts = 0;
  MSGPACK_DEFINE(reactor, name, what, handler, kind, action, restarts)

  FailureKind failure_kind() const noexcept { return static_cast<FailureKind>(kind); }
  FailureAction failure_action() const noexcept { return static_cast<FailureAction>(action); }
};

const char* to_string(FailureKind k) noexcept;
const char* to_string(FailureAction a) noexcept;

}  // namespace reheap
