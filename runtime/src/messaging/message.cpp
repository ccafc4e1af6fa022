// Messages: envelopes, encoding scratch space, and checked decoding (see message.h).
#include "reheap/message.h"

#include <cstring>
#include <string>

#include "message_allocator/message_fast.h"
#include "messaging/envelope.h"
#include "reheap/heap_scope.h"

namespace reheap {

using detail::Envelope;

const char* to_string(SendResult r) noexcept {
  switch (r) {
    case SendResult::kOk: return "ok";
    case SendResult::kNoSuchReactor: return "no such reactor";
    case SendResult::kMailboxFull: return "mailbox full";
    case SendResult::kShuttingDown: return "runtime shutting down";
    case SendResult::kNoMemory: return "message allocator exhausted";
    case SendResult::kEncodeFailed: return "encoding failed";
    case SendResult::kTypeClash: return "another type of this program has the same message type name";
  }
  return "unknown";
}

ActorRef Message::sender() const noexcept { return ActorRef(e_->sender); }

namespace {

// `what` is taken by reference: the caller built it with the receiver's heap current, so it must
// also be destroyed with that heap current, in the caller's frame. A by-value parameter would be
// destroyed here, under the system scope, which frees a block of the receiver's heap while that
// heap is not current (checked builds abort).
[[noreturn]] void fail(std::uint64_t type_id, const std::string& what) {
  HeapScope system(nullptr);  // the exception's text must not land in the receiver's heap...
  throw MessageError(type_id, what);
}

}  // namespace

void Message::check_raw(std::uint64_t type_id, std::size_t size, std::size_t align) const {
  if (e_->type_id != type_id) fail(type_id, "message: not of the type asked for");
  if (e_->encoding != Encoding::kRaw) fail(type_id, "message: not a raw (trivially copyable) payload");
  if (e_->size != size) {
    fail(type_id, "message: raw payload of " + std::to_string(e_->size) + " bytes, expected " +
                      std::to_string(size));
  }
  if (align > kMaxRawAlign) fail(type_id, "message: over-aligned raw type");
}

msgpack::object_handle Message::unpack_checked(std::uint64_t type_id) const {
  if (e_->type_id != type_id) fail(type_id, "message: not of the type asked for");
  if (e_->encoding != Encoding::kMsgpack) fail(type_id, "message: not a msgpack payload");
  const auto* data = static_cast<const char*>(e_->payload());
  const std::size_t size = e_->size;
  // No container in a buffer of `size` bytes can hold more than `size` elements: these limits
  // stop a corrupt length field from making the unpacker allocate gigabytes.
  const std::size_t n = size == 0 ? 1 : size;
  const msgpack::unpack_limit limit(n, n, n, n, n, 64);
  std::size_t offset = 0;
  msgpack::object_handle handle;
  try {
    HeapScope system(nullptr);  // msgpack's zone is scratch: it must not grow the receiver's heap
    handle = msgpack::unpack(data, size, offset, nullptr, nullptr, limit);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    fail(type_id, std::string("message: malformed msgpack: ") + e.what());
  }
  if (offset != size) {
    fail(type_id, "message: " + std::to_string(size - offset) + " trailing bytes after the value");
  }
  return handle;
}

void Message::throw_convert_error(std::uint64_t type_id, const char* what) const {
  fail(type_id, std::string("message: msgpack value of the wrong shape: ") + what);
}

namespace detail {

// The allocator's fast paths inlined (message_fast.h) rather than called through
// MessageAllocator: every message passes through these two, one call each instead of two.
Envelope* allocate_envelope(std::size_t size) noexcept {
  return static_cast<Envelope*>(msg::allocate_fast(sizeof(Envelope) + size));
}

void free_envelope(Envelope* e) noexcept { msg::free_fast(e); }

namespace {
Envelope* new_envelope(std::uint64_t type_id, Encoding encoding, std::size_t size,
                       SendResult* result) noexcept {
  if (size > UINT32_MAX) {
    *result = SendResult::kEncodeFailed;
    return nullptr;
  }
  Envelope* e = allocate_envelope(size);
  if (e == nullptr) {
    *result = SendResult::kNoMemory;
    return nullptr;
  }
  e->next = nullptr;
  e->receiver = 0;
  e->sender = 0;
  e->exchange = kPlainMessage;
  e->correlation = 0;
  e->type_id = type_id;
  e->size = static_cast<std::uint32_t>(size);
  e->encoding = encoding;
  return e;
}
}  // namespace

Envelope* make_raw_envelope(std::uint64_t type_id, const void* data, std::size_t size,
                            SendResult* result) noexcept {
  Envelope* e = new_envelope(type_id, Encoding::kRaw, size, result);
  if (e != nullptr && size != 0) std::memcpy(e->payload(), data, size);
  return e;
}

namespace {
msgpack::sbuffer& scratch() noexcept {
  // sbuffer grows with malloc, never with operator new: it is safe whatever heap is current.
  static thread_local msgpack::sbuffer buffer(256);
  return buffer;
}
}  // namespace

msgpack::sbuffer& encode_scratch() noexcept {
  msgpack::sbuffer& buffer = scratch();
  buffer.clear();
  return buffer;
}

Envelope* make_envelope_from_scratch(std::uint64_t type_id, SendResult* result) noexcept {
  msgpack::sbuffer& buffer = scratch();
  Envelope* e = new_envelope(type_id, Encoding::kMsgpack, buffer.size(), result);
  if (e != nullptr && buffer.size() != 0) std::memcpy(e->payload(), buffer.data(), buffer.size());
  return e;
}

Envelope* make_system_envelope(SystemMessage what, std::size_t payload) noexcept {
  SendResult ignored;
  return new_envelope(static_cast<std::uint64_t>(what), Encoding::kSystem, payload, &ignored);
}

}  // namespace detail
}  // namespace reheap
