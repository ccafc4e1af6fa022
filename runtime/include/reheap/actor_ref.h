// ActorRef: the address of a reactor.
//
// A reference is a 64-bit number: the reactor's slot in the runtime's cell table (bits 0..23),
// the slot's generation (bits 24..39) and the origin (bits 40..63) — the NodeIdentity of the
// runtime that minted it (heap/include/reheap/node_identity.h): its node id (6 bits) above its
// incarnation (18 bits). The number is stored inside the reactor's own heap, so it survives a
// snapshot and a restore, in this process or another, and it does not change when the reactor
// moves to another worker thread.
//
// What is guaranteed: a reference names at most one reactor ever, in every process whose
// identities are distinct (different node ids, or a node's incarnations counted in a state
// directory; random incarnations make that probable, not certain: see node_identity.h). Runtimes
// of one process share its identity and each has its own slot table, but every generation of a
// slot is claimed process-wide before a table issues it, so two runtimes of one process, alive
// together or one after the other, never mint the same reference either (a reactor saved in one
// restores into the other under its own). A runtime resolves a reference of its own origin through its
// slot table; a restored reactor that cannot have the slot its reference names (it comes from
// another process, or a later reactor took the slot) keeps its reference and is found through a
// map. A reference of another origin that names no reactor restored here is a dead letter
// (kNoSuchReactor), never another reactor. A reference to a stopped reactor stays harmless: sends to it report
// kNoSuchReactor (or are dropped as dead letters when the reactor stops with the message already
// in flight), and a later reactor in the same slot has another generation; a slot whose 65,535
// generations are spent is retired rather than reused.
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
  static constexpr unsigned kSlotBits = 24;
  static constexpr unsigned kGenerationBits = 16;
  static constexpr unsigned kOriginBits = 24;
  static constexpr unsigned kIncarnationBits = 18;  // of the origin; the node id is above
  static constexpr std::uint32_t kMaxGeneration = (std::uint32_t{1} << kGenerationBits) - 1;
  static_assert(kSlotBits + kGenerationBits + kOriginBits == 64);

  constexpr ActorRef() noexcept = default;
  constexpr explicit ActorRef(std::uint64_t value) noexcept : value_(value) {}
  // Each part is truncated to its width.
  static constexpr ActorRef make(std::uint32_t origin, std::uint32_t slot, std::uint32_t generation) noexcept {
    return ActorRef(std::uint64_t{origin & mask(kOriginBits)} << (kSlotBits + kGenerationBits) |
                    std::uint64_t{generation & mask(kGenerationBits)} << kSlotBits |
                    std::uint64_t{slot & mask(kSlotBits)});
  }

  constexpr std::uint64_t value() const noexcept { return value_; }
  constexpr std::uint32_t slot() const noexcept {
    return static_cast<std::uint32_t>(value_) & mask(kSlotBits);
  }
  constexpr std::uint32_t generation() const noexcept {
    return static_cast<std::uint32_t>(value_ >> kSlotBits) & mask(kGenerationBits);
  }
  constexpr std::uint32_t origin() const noexcept {
    return static_cast<std::uint32_t>(value_ >> (kSlotBits + kGenerationBits));
  }
  // The origin's parts (NodeIdentity::origin()).
  constexpr std::uint32_t node() const noexcept { return origin() >> kIncarnationBits; }
  constexpr std::uint32_t incarnation() const noexcept { return origin() & mask(kIncarnationBits); }
  constexpr explicit operator bool() const noexcept { return value_ != 0; }
  friend constexpr bool operator==(ActorRef, ActorRef) noexcept = default;

  MSGPACK_DEFINE(value_)

 private:
  static constexpr std::uint32_t mask(unsigned bits) noexcept { return (std::uint32_t{1} << bits) - 1; }

  std::uint64_t value_ = 0;  // 0: no reactor
};

}  // namespace reheap

template <>
struct std::hash<reheap::ActorRef> {
  std::size_t operator()(reheap::ActorRef r) const noexcept {
    return std::hash<std::uint64_t>{}(r.value());
  }
};
