// Message checks: "expect a T from S to R satisfying P" and "expect no such message for a while",
// each one statement of a test on a TestRuntime.
//
// A MessagePattern says what a message must be: message<T>() (any message: message()), narrowed
// by .from(sender), .to(receiver) and .with(predicate or value). TestRuntime::expect(pattern) and
// TestRuntime::expect_none(pattern, span) check it and answer a CheckResult.
//
// The choice: a check inspects the next pending delivery and runs it, as CAF's deterministic
// fixture does, rather than consuming what a probe recorded, as Akka's TestProbe does. The pattern's
// addresses pick a mailbox (the oldest pending message to R, from S when given; with neither, the
// oldest pending message at all), and its type and predicate say what that message must be. So a
// test states the route of a message hop by hop, for any receiver (a reactor under test as well as
// a Probe), and a check that passes delivers the message, exactly as step() would have: the
// oldest message of a (sender, receiver) channel is always one step() may take under
// MessageOrder::kShuffle, so a test written with checks never sees an order the runtime could not
// produce. Details, and what expect_none runs, are in test_runtime.h ("Checks").
//
// Failures. A check answers a CheckResult rather than throwing: the test chooses EXPECT_TRUE (go
// on) or ASSERT_TRUE (stop), GoogleTest reports the file and line of the statement, and the library
// needs no test framework. The result converts to testing::AssertionResult (to any type
// constructible from bool that streams a string, which is how it names no GoogleTest type), so
// that `EXPECT_TRUE(rt.expect(...))` prints the result's text: the expected message, and the
// actual one by its C++ type name with its payload decoded (msgpack printed as text, raw bytes in
// hex), its sender and receiver, and the messages delivered meanwhile. CheckResult is [[nodiscard]]:
// a check whose answer nobody reads does not compile (the project builds with -Werror).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include <msgpack.hpp>

#include "reheap/actor_ref.h"
#include "reheap/message.h"

namespace reheap::testing {

namespace detail {
// A value as a failure message prints it: msgpack decoded to text, raw bytes in hex.
std::string payload_text(Encoding encoding, const void* data, std::size_t size);

template <class T>
std::string value_text(const T& value) {
  if constexpr (kRawMessage<T>) {
    return payload_text(Encoding::kRaw, &value, sizeof(T));
  } else {
    msgpack::sbuffer buffer;
    msgpack::pack(buffer, value);
    return payload_text(Encoding::kMsgpack, buffer.data(), buffer.size());
  }
}

// A pattern without its type, for the checks' code in the library (message_check.cpp).
struct CheckSpec {
  std::uint64_t type_id = 0;
  bool any_type = true;
  std::optional<ActorRef> from;
  std::optional<ActorRef> to;
  const std::string* predicate_text = nullptr;
  // Decodes a message of the type and applies the predicate, keeping the value in `value`.
  bool (*accepts)(const void* pattern, const Message& message, void* value, std::string* why) = nullptr;
  const void* pattern = nullptr;
  void* value = nullptr;  // a std::optional<T>
};
struct CheckOutcome {
  bool passed;
  std::string text;
  ActorRef from;
  ActorRef to;
};
class MessageChecks;  // the checks' code, which reads a TestRuntime's queues
}  // namespace detail

// What a message must be: its addresses (each optional; the null reference means "the test"),
// its type (none for message()), and a predicate on its decoded value. A value type: copy it,
// keep it, check it again.
template <class T = void>
class MessagePattern {
 public:
  using Value = std::conditional_t<std::is_void_v<T>, std::nullptr_t, T>;

  MessagePattern from(ActorRef sender) const {
    MessagePattern p = *this;
    p.from_ = sender;
    return p;
  }
  MessagePattern to(ActorRef receiver) const {
    MessagePattern p = *this;
    p.to_ = receiver;
    return p;
  }
  // The message's value must satisfy `predicate`; `what` says how in a failure message.
  template <class Predicate>
    requires(!std::is_void_v<T> && std::predicate<const Predicate&, const T&>)
  MessagePattern with(Predicate predicate, std::string what = "a predicate") const {
    MessagePattern p = *this;
    p.predicate_ = std::move(predicate);
    p.predicate_text_ = "satisfying " + std::move(what);
    return p;
  }
  // The message's value must equal `value`.
  template <class U = T>
    requires(!std::is_void_v<U> && std::equality_comparable<U>)
  MessagePattern with(const U& value) const {
    MessagePattern p = *this;
    p.predicate_ = [value](const U& v) { return v == value; };
    p.predicate_text_ = "equal to " + detail::value_text(value);
    return p;
  }

  const std::optional<ActorRef>& sender() const noexcept { return from_; }
  const std::optional<ActorRef>& receiver() const noexcept { return to_; }
  const std::string& predicate_text() const noexcept { return predicate_text_; }

  // Whether a message of the pattern's type has a value the predicate accepts: decodes it into
  // `*value` (when given) and says why not in `*why`. Addresses and the type id are the caller's.
  bool accepts(const Message& message, std::optional<Value>* value, std::string* why) const
    requires(!std::is_void_v<T>)
  {
    std::optional<T> decoded = message.template try_get<T>(why);
    if (!decoded) return false;
    if (predicate_ && !predicate_(*decoded)) {
      *why = "not " + predicate_text_;
      return false;
    }
    if (value != nullptr) *value = std::move(decoded);
    return true;
  }

 private:
  std::optional<ActorRef> from_;
  std::optional<ActorRef> to_;
  std::function<bool(const Value&)> predicate_;
  std::string predicate_text_;
};

// A message of type T (`message<Deposit>()`), or of any type (`message()`).
template <class T = void>
MessagePattern<T> message() {
  static_assert(std::is_same_v<T, std::remove_cvref_t<T>>, "message<T>(): name the type without const or &");
  if constexpr (!std::is_void_v<T>) reheap::detail::name_message_type<T>();
  return MessagePattern<T>();
}

// What a check found. True when it passed; text() says what was expected and what came, passed or
// not. For a passed expect of a typed pattern, value() is the message's value (decoded into the
// test's memory) and sender()/receiver() its addresses.
template <class T = void>
class [[nodiscard]] CheckResult {
 public:
  CheckResult(bool passed, std::string text, ActorRef sender = {}, ActorRef receiver = {})
      : passed_(passed), text_(std::move(text)), sender_(sender), receiver_(receiver) {}

  explicit operator bool() const noexcept { return passed_; }
  bool passed() const noexcept { return passed_; }
  const std::string& text() const noexcept { return text_; }
  ActorRef sender() const noexcept { return sender_; }
  ActorRef receiver() const noexcept { return receiver_; }

  // The matched message's value; throws std::logic_error, carrying text(), if the check failed.
  using Value = std::conditional_t<std::is_void_v<T>, std::nullptr_t, T>;

  const Value& value() const
    requires(!std::is_void_v<T>)
  {
    if (!value_) throw std::logic_error("reheap::testing::CheckResult::value: the check failed: " + text_);
    return *value_;
  }
  const Value& operator*() const
    requires(!std::is_void_v<T>)
  {
    return value();
  }
  const Value* operator->() const
    requires(!std::is_void_v<T>)
  {
    return &value();
  }

  // To testing::AssertionResult, named by its shape only: constructible from bool, and a string
  // streams into it. The text goes with it, passed or not (GoogleTest prints it on failure).
  template <class Assertion>
    requires(!std::same_as<Assertion, bool> && std::constructible_from<Assertion, bool> &&
             requires(Assertion& a, const std::string& s) {
               { a << s } -> std::same_as<Assertion&>;
             })
  operator Assertion() const {
    Assertion assertion(passed_);
    assertion << text_;
    return assertion;
  }

  // For TestRuntime::expect: the decoded value of the message that passed.
  void set_value(Value value)
    requires(!std::is_void_v<T>)
  {
    value_ = std::move(value);
  }

 private:
  bool passed_;
  std::string text_;
  ActorRef sender_;
  ActorRef receiver_;
  std::optional<Value> value_;
};

}  // namespace reheap::testing
