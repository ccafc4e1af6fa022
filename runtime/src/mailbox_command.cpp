// Commands in mailbox order (mailbox_command.h).
#include "mailbox_command.h"

#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "reheap/heap_scope.h"
#include "runtime_impl.h"
#include "snapshot_request.h"

namespace reheap::detail {
namespace {

struct MailboxCommand {
  const char* operation;
  const std::function<void(Cell*)>* f;  // the caller's, alive while it waits
  std::promise<void> done;
};

MailboxCommand* command_of(const Envelope& e) noexcept {
  MailboxCommand* command;
  std::memcpy(&command, e.payload(), sizeof command);
  return command;
}

}  // namespace

void run_in_mailbox_order(RuntimeImpl& rt, ActorRef ref, const char* operation,
                          const std::function<void(Cell*)>& f) {
  HeapScope system(nullptr);
  rt.require_outside_workers(operation);
  const auto fail = [&](const char* why) {
    throw std::runtime_error(std::string("reheap::Runtime::") + operation + ": " + why);
  };
  auto* command = new MailboxCommand{operation, &f, {}};
  std::future<void> result = command->done.get_future();
  Envelope* e = make_system_envelope(SystemMessage::kCommand, sizeof command);
  if (e == nullptr) {
    delete command;
    fail("the message allocator is exhausted");
  }
  std::memcpy(e->payload(), &command, sizeof command);
  const SendResult sent = send_as(rt, ActorRef(), ref, e, SendResult::kOk);
  if (sent != SendResult::kOk) {
    delete command;  // the envelope went with the refusal
    if (sent == SendResult::kNoSuchReactor) {
      throw std::runtime_error(std::string("reheap::Runtime::") + operation + ": no reactor " +
                               std::to_string(ref.value()));
    }
    fail(to_string(sent));
  }
  result.get();
}

void run_mailbox_command(Cell* c, const Envelope& e) noexcept {
  HeapScope system(nullptr);
  MailboxCommand* command = command_of(e);
  try {
    (*command->f)(c);
    command->done.set_value();
  } catch (...) {
    command->done.set_exception(std::current_exception());
  }
  delete command;
}

void abandon_system_message(const Envelope& e) noexcept {
  abandon_if_snapshot_request(e);
  abandon_if_mailbox_command(e);
}

void abandon_if_mailbox_command(const Envelope& e) noexcept {
  if (e.encoding != Encoding::kSystem ||
      e.type_id != static_cast<std::uint64_t>(SystemMessage::kCommand)) {
    return;
  }
  HeapScope system(nullptr);
  MailboxCommand* command = command_of(e);
  try {
    command->done.set_exception(std::make_exception_ptr(std::runtime_error(
        std::string("reheap::Runtime::") + command->operation +
        ": the reactor stopped before it reached the request")));
  } catch (...) {
    command->done.set_exception(std::current_exception());  // no memory for the message
  }
  delete command;
}

}  // namespace reheap::detail
