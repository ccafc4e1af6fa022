// Commands in mailbox order (mailbox_command.h).
#include "messaging/mailbox_command.h"

#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "checkpoint/snapshot_request.h"
#include "reheap/heap_scope.h"
#include "runtime_impl.h"

namespace reheap::detail {
namespace {

// Owned by the calling thread, which waits for `done` and then frees it. The worker hands over its
// outcome and never touches the command after: in particular it holds no reference to a failure's
// exception once `done` is set, so the exception dies on the caller's thread, where it is read.
struct MailboxCommand {
  const char* operation;
  const std::function<void(Cell*)>* f;  // the caller's, alive while it waits
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::exception_ptr error;

  void finish(std::exception_ptr outcome) noexcept {
    std::lock_guard<std::mutex> lock(mutex);
    error = std::move(outcome);
    done = true;
    finished.notify_all();
  }
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
  const auto fail = [&](const std::string& why) {
    throw std::runtime_error(std::string("reheap::Runtime::") + operation + ": " + why);
  };
  auto command = std::make_unique<MailboxCommand>();
  command->operation = operation;
  command->f = &f;
  MailboxCommand* raw = command.get();
  Envelope* e = make_system_envelope(SystemMessage::kCommand, sizeof raw);
  if (e == nullptr) fail("the message allocator is exhausted");
  std::memcpy(e->payload(), &raw, sizeof raw);
  const SendResult sent = send_as(rt, ActorRef(), ref, e, SendResult::kOk);  // frees e if refused
  if (sent == SendResult::kNoSuchReactor) fail("no reactor " + std::to_string(ref.value()));
  if (sent != SendResult::kOk) fail(to_string(sent));
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(command->mutex);
    command->finished.wait(lock, [&] { return command->done; });
    error = std::move(command->error);
  }
  if (error) std::rethrow_exception(error);
}

void run_mailbox_command(Cell* c, const Envelope& e) noexcept {
  HeapScope system(nullptr);
  MailboxCommand* command = command_of(e);
  std::exception_ptr error;
  try {
    (*command->f)(c);
  } catch (...) {
    error = std::current_exception();
  }
  command->finish(std::move(error));
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
  std::exception_ptr error;
  try {
    error = std::make_exception_ptr(std::runtime_error(std::string("reheap::Runtime::") + command->operation +
                                                       ": the reactor stopped before it reached the request"));
  } catch (...) {
    error = std::current_exception();  // no memory for the message
  }
  command->finish(std::move(error));
}

}  // namespace reheap::detail
