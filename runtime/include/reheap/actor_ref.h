// ActorRef: the address of a reactor.
//
// A reference is a 64-bit number: the reactor's slot in the runtime's cell table (low 32 bits)
// and the slot's generation (high 32 bits). The number is stored inside the reactor's own heap,
// so it survives a snapshot and a restore, in this process or another, and it does not change
// when the reactor moves to another worker thread. A reference to a stopped reactor stays
// harmless: sends to it report kNoSuchReactor (or are dropped as dead letters when the reactor
// stops with the message already in flight), and a later reactor in the same slot has another
// generation. Restoring a snapshot brings its reactor back under its old reference.
//
// ActorRef is trivially copyable, so it travels in messages as is; MSGPACK_DEFINE-style types can
// hold one (it packs as an unsigned integer).
#pragma once

#include <cstdint>
#include <functional>

#include <msgpack.hpp>

namespace reheap {

class ActorRef {
 public:
  constexpr ActorRef() noexcept = default;
  constexpr explicit ActorRef(std::uint64_t value) noexcept : value_(value) {}

  constexpr std::uint64_t value() const noexcept { return value_; }
  constexpr std::uint32_t slot() const noexcept { return static_cast<std::uint32_t>(value_); }
  constexpr std::uint32_t generation() const noexcept {
    return static_cast<std::uint32_t>(value_ >> 32);
  }
  constexpr explicit operator bool() const noexcept { return value_ != 0; }
  friend constexpr bool operator==(ActorRef, ActorRef) noexcept = default;

  MSGPACK_DEFINE(value_)

 private:
  std::uint64_t value_ = 0;  // 0: no reactor
};

}  // namespace reheap

template <>
struct std::hash<reheap::ActorRef> {
  std::size_t operator()(reheap::ActorRef r) const noexcept {
    return std::hash<std::uint64_t>{}(r.value());
  }
};
