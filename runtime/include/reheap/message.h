// Messages: what reactors send each other, and how a value becomes one.
//
// A message is one block of the message allocator (message_allocator.h): an envelope header
// (sender, receiver, type id, encoding, size) followed by the payload. The sending thread
// allocates and fills it, the receiving thread reads and frees it; nothing of a message lives in
// a reactor heap, so a snapshot never holds a message in flight.
//
// How a value of type T is encoded (MessageCodec<T>):
//   - trivially copyable T: copied as bytes ("raw"). The receiver reads it in place, without
//     decoding or copying (Message::view<T>, or a typed handler taking `const T&`).
//   - anything else: msgpack-c (types with MSGPACK_DEFINE, the std containers, strings, ...).
//     The receiver decodes it into its own heap, since decoding allocates with plain `new`.
// A type can force msgpack with `static constexpr bool reheap_msgpack = true;`.
//
// The type id is a 64-bit hash of the type's name (or of `static constexpr std::string_view
// reheap_message_name` when the type declares one), the same in every build of the program. Two
// types of one name (in anonymous namespaces of two files, or one reheap_message_name given
// twice) would share an id: the first type handled or sent owns it for the life of the process,
// and the other is refused where it is first handled (std::logic_error) or sent
// (SendResult::kTypeClash), never delivered to the first type's handlers.
//
// Decoding never has undefined behaviour: a payload of the wrong size for a raw type, a malformed
// msgpack buffer, trailing bytes, or a msgpack value of the wrong shape all raise MessageError
// (Message::get) or report it (Message::try_get; typed handlers call Reactor::on_message_error).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>

#include <msgpack.hpp>

#include "reheap/actor_ref.h"

namespace reheap {

// ---- type ids --------------------------------------------------------------------------------

namespace detail {
template <class T>
constexpr std::string_view raw_type_name() noexcept {
  // "... [with T = Name; ...]" (GCC) or "... [T = Name]" (Clang).
  constexpr std::string_view f = __PRETTY_FUNCTION__;
  constexpr std::size_t start = f.find("T = ") + 4;
  constexpr std::size_t end = f.find_first_of(";]", start);
  return f.substr(start, end - start);
}

constexpr std::uint64_t fnv1a(std::string_view s) noexcept {
  std::uint64_t h = 14695981039346656037ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

template <class T>
concept NamedMessage = requires { std::string_view{T::reheap_message_name}; };
template <class T>
concept ForcedMsgpack = requires { requires T::reheap_msgpack; };
}  // namespace detail

template <class T>
constexpr std::string_view message_type_name() noexcept {
  if constexpr (detail::NamedMessage<T>) {
    return T::reheap_message_name;
  } else {
    return detail::raw_type_name<T>();
  }
}

template <class T>
constexpr std::uint64_t message_type_id() noexcept {
  return detail::fnv1a(message_type_name<std::remove_cvref_t<T>>());
}

namespace detail {
// Makes `type` the owner of `id` unless another type owns it; true when `type` owns it.
bool claim_message_type(std::uint64_t id, const std::type_info& type) noexcept;
// Writes `type` down as a type of this program with the id `id`, for message_type_name_of only:
// it owns nothing and is refused nothing (claim_message_type decides that).
bool note_message_type_name(std::uint64_t id, const std::type_info& type) noexcept;
// The C++ name of the type with id `id` in this process, or "" if the program has none: the type
// that owns the id if one was handled or sent, else the noted one (several, joined by " or ", if
// the program holds more than one type of that id and none owns it yet). For reports of recorded
// messages, which keep only the id.
std::string message_type_name_of(std::uint64_t id);
[[noreturn]] void throw_message_type_clash(std::uint64_t id, std::string_view name);

// V's name, noted at program start in every binary whose code handles, sends or reads a V. A
// replay restores a reactor without running its constructor, where its handle<>() calls are, and
// may replay messages this process never sent: its reports still name their types, since the
// code that can handle or send them is in the binary. The note is a static member of a class
// template, initialised with the program's (or a shared library's) static objects wherever the
// template is instantiated; naming it (name_message_type) costs no instruction where it is named.
template <class V>
struct MessageTypeNameNote {
  static inline const bool noted = note_message_type_name(message_type_id<V>(), typeid(V));
};
template <class T>
inline void name_message_type() noexcept {
  static_cast<void>(MessageTypeNameNote<std::remove_cvref_t<T>>::noted);
}

// Whether V owns its type id. The first use of V asks the process-wide registry; every later one
// reads the answer (a guard byte), so a send pays a load and a branch.
template <class V>
bool message_type_owns_id() noexcept {
  static const bool owns = claim_message_type(message_type_id<V>(), typeid(V));
  return owns;
}
}  // namespace detail

enum class Encoding : std::uint8_t { kRaw = 0, kMsgpack = 1, kSystem = 2 };

template <class T>
inline constexpr bool kRawMessage =
    std::is_trivially_copyable_v<T> && !detail::ForcedMsgpack<T>;

// ---- errors ----------------------------------------------------------------------------------

// A message that could not be decoded as the type asked for.
class MessageError : public std::runtime_error {
 public:
  MessageError(std::uint64_t type_id, std::string what)
      : std::runtime_error(std::move(what)), type_id_(type_id) {}
  std::uint64_t type_id() const noexcept { return type_id_; }

 private:
  std::uint64_t type_id_;
};

// What a send did. Sends never throw for a full mailbox or a missing receiver: they say so here.
enum class SendResult : std::uint8_t {
  kOk = 0,
  kNoSuchReactor,   // the reference names no live reactor
  kMailboxFull,     // the receiver's bounded mailbox rejects (OverflowPolicy::kReject)
  kShuttingDown,    // the runtime no longer accepts work
  kNoMemory,        // the message allocator is exhausted
  kEncodeFailed,    // msgpack could not encode the value (it threw)
  kTypeClash,       // another type of this program owns the value's type id (message.h)
};

const char* to_string(SendResult r) noexcept;

// ---- the envelope ----------------------------------------------------------------------------

namespace detail {
struct Envelope;
struct MessageAccess;
}

// A received message, valid for the duration of the handler it is given to.
//
// It copies the envelope fields that every handler reads (type id, encoding, size, payload) when
// it is made, so that dispatching on the type and checking a raw payload are inline compares,
// not calls into the runtime (the envelope's layout is the runtime's own).
class Message {
 public:
  std::uint64_t type_id() const noexcept { return type_id_; }
  Encoding encoding() const noexcept { return encoding_; }
  ActorRef sender() const noexcept;  // null when sent from outside any reactor
  const void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

  template <class T>
  bool is() const noexcept {
    detail::name_message_type<T>();
    return type_id() == message_type_id<T>();
  }

  // Zero-copy access to a raw payload; throws MessageError on a type or size mismatch.
  template <class T>
    requires kRawMessage<T>
  const T& view() const {
    detail::name_message_type<T>();
    if (type_id_ != message_type_id<T>() || encoding_ != Encoding::kRaw || size_ != sizeof(T) ||
        alignof(T) > kMaxRawAlign) [[unlikely]] {
      check_raw(message_type_id<T>(), sizeof(T), alignof(T));  // throws, saying what differs
    }
    return *static_cast<const T*>(data_);
  }

  // Decodes (raw: copies) the payload as T; throws MessageError if it is not a valid T.
  template <class T>
  T get() const {
    if constexpr (kRawMessage<T>) {
      return view<T>();
    } else {
      detail::name_message_type<T>();
      T value{};
      decode_msgpack(message_type_id<T>(), [&value](const msgpack::object& o) { o.convert(value); });
      return value;
    }
  }

  template <class T>
  std::optional<T> try_get(std::string* why = nullptr) const {
    try {
      return get<T>();
    } catch (const MessageError& e) {
      if (why != nullptr) *why = e.what();
      return std::nullopt;
    }
  }

 private:
  void check_raw(std::uint64_t type_id, std::size_t size, std::size_t align) const;
  template <class F>
  void decode_msgpack(std::uint64_t type_id, F&& convert) const {
    const msgpack::object_handle handle = unpack_checked(type_id);
    try {
      convert(handle.get());
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception& e) {
      throw_convert_error(type_id, e.what());
    }
  }
  msgpack::object_handle unpack_checked(std::uint64_t type_id) const;
  [[noreturn]] void throw_convert_error(std::uint64_t type_id, const char* what) const;

  // The runtime's inline constructor (detail::MessageAccess), with the fields read by the caller:
  // the runtime makes a Message of an envelope; a program only receives one.
  friend struct detail::MessageAccess;
  Message(const detail::Envelope& e, std::uint64_t type_id, Encoding encoding, std::uint32_t size,
          const void* data) noexcept
      : e_(&e), type_id_(type_id), data_(data), size_(size), encoding_(encoding) {}

  static constexpr std::size_t kMaxRawAlign = alignof(std::max_align_t) * 2;

  const detail::Envelope* e_;
  std::uint64_t type_id_;
  const void* data_;
  std::uint32_t size_;
  Encoding encoding_;
};

// ---- encoding (used by Reactor::send and Runtime::send) -------------------------------------

namespace detail {

// Builds an envelope: allocates it from the message allocator and fills the payload. Returns null
// with `*result` set when it cannot.
Envelope* make_raw_envelope(std::uint64_t type_id, const void* data, std::size_t size,
                            SendResult* result) noexcept;
// msgpack: the value is packed into a per-thread scratch buffer (system memory), then copied
// into an envelope of the exact size.
msgpack::sbuffer& encode_scratch() noexcept;
Envelope* make_envelope_from_scratch(std::uint64_t type_id, SendResult* result) noexcept;

template <class T>
Envelope* encode(const T& value, SendResult* result) noexcept {
  using V = std::remove_cvref_t<T>;
  name_message_type<V>();
  if (!message_type_owns_id<V>()) [[unlikely]] {
    *result = SendResult::kTypeClash;
    return nullptr;
  }
  if constexpr (kRawMessage<V>) {
    return make_raw_envelope(message_type_id<V>(), &value, sizeof(V), result);
  } else {
    msgpack::sbuffer& buffer = encode_scratch();
    try {
      msgpack::pack(buffer, value);
    } catch (...) {
      *result = SendResult::kEncodeFailed;
      return nullptr;
    }
    return make_envelope_from_scratch(message_type_id<V>(), result);
  }
}

}  // namespace detail
}  // namespace reheap
