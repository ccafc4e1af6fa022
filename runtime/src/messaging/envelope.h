// Envelope: the header of every message, followed by its payload, in one block of the message
// allocator. The sending thread writes it whole before publishing it (Mailbox::push releases it),
// the receiving thread reads it and frees it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "reheap/actor_ref.h"
#include "reheap/message.h"

namespace reheap::detail {

// System messages: the runtime's own requests, ordered with the user's in the mailbox.
// kSnapshot carries a SnapshotRequest (snapshot_request.h) as its payload, kCommand a pointer to
// a blocking Runtime operation's command (mailbox_command.h).
enum class SystemMessage : std::uint64_t { kStop = 1, kSnapshot = 2, kCommand = 3 };

// What a message is in a request/reply exchange (reheap/request.h). Part of the recording format
// (RECORDING_FORMAT.md, record kind 30): never renumber.
enum Exchange : std::uint8_t { kPlainMessage = 0, kRequestMessage = 1, kReplyMessage = 2 };

struct Envelope {
  Envelope* next;            // the mailbox's link (see mailbox.h)
  std::uint64_t receiver;    // ActorRef value: a recycled cell drops what was not meant for it
  std::uint64_t sender;      // ActorRef value, 0 from outside
  std::uint64_t type_id;     // message_type_id<T>, or SystemMessage for kSystem
  std::uint32_t size;        // payload bytes
  Encoding encoding;
  std::uint8_t counted;  // the sender counted it in the receiver's bounded_length
  std::uint8_t exchange;  // Exchange: a plain message, a request or a reply (request.h)
  std::uint8_t reserved;
  std::uint64_t correlation;  // the request's id (RequestId) for a request or a reply, else 0

  void* payload() noexcept { return this + 1; }
  const void* payload() const noexcept { return this + 1; }
};
static_assert(sizeof(Envelope) == 48 && sizeof(Envelope) % 16 == 0,
              "the payload must start 16-byte aligned");

// The Message a handler gets for `e`, built inline (reheap/message.h).
struct MessageAccess {
  static Message of(const Envelope& e) noexcept {
    return Message(e, e.type_id, e.encoding, e.size, e.payload());
  }
  static const Envelope& envelope(const Message& m) noexcept { return *m.e_; }
};

// Allocates an envelope for `size` payload bytes (null when the message allocator is exhausted)
// and frees one.
Envelope* allocate_envelope(std::size_t size) noexcept;
void free_envelope(Envelope* e) noexcept;
Envelope* make_system_envelope(SystemMessage what, std::size_t payload = 0) noexcept;

}  // namespace reheap::detail
