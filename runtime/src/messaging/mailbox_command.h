// Commands in mailbox order: a blocking Runtime operation (snapshot, snapshot_increment,
// dump_recording) that runs on the reactor's worker when the reactor reaches it in its mailbox.
//
// Such an operation must see the reactor as the calling thread left it: after its on_start or
// on_restored, and after every message that thread sent it before the call (per-sender FIFO,
// runtime.h). A command posted to the worker directly could run before any of those, and save a
// reactor that never started. So it travels as a SystemMessage::kCommand envelope behind them,
// whose payload points to the command (process memory). Every place that drops envelopes
// without handling them calls abandon_system_message, which fails the command's caller instead
// of leaving it waiting.
#pragma once

#include <functional>

#include "messaging/envelope.h"
#include "reactor/cell.h"
#include "reheap/actor_ref.h"

namespace reheap::detail {

class RuntimeImpl;

// Sends the command to `ref` and waits until it ran (its exception is rethrown here). Throws
// std::runtime_error if no such reactor lives, the runtime shuts down, or the reactor stopped
// before it reached the command.
void run_in_mailbox_order(RuntimeImpl& rt, ActorRef ref, const char* operation,
                          const std::function<void(Cell*)>& f);

// The reactor's worker, between two of its events.
void run_mailbox_command(Cell* c, const Envelope& e) noexcept;

// Any thread: `e` will never be handled. If it is a command, its caller gets an exception; the
// first also answers a snapshot request (snapshot_request.h). The shutdown's final sweep, after
// the workers are gone, calls the second: a snapshot request's requester is gone by then too.
void abandon_system_message(const Envelope& e) noexcept;
void abandon_if_mailbox_command(const Envelope& e) noexcept;

}  // namespace reheap::detail
