// SlotGenerations: the generations every runtime of this process has issued, slot by slot.
//
// A reference is (origin, slot, generation), and the origin is the process's NodeIdentity, which
// all its runtimes share (actor_ref.h). Each runtime has its own slot table, so without a record
// kept above them two runtimes of one process, alive together or one after the other, would both
// mint (slot 1, generation 1): a reactor saved from one could not be restored into the other next
// to its namesake, and a message meant for one would reach the other's reactor if a reference
// crossed between them. Every table therefore claims each generation here before it issues it.
//
// One 16-bit counter per slot of ActorRef's 24 bits, 32 MiB of zeroed static storage of which
// only the pages of slots in use are ever touched (2 KiB covers the first 1,024 slots).
#pragma once

#include <cstdint>

namespace reheap::detail {

// Claims a generation of `slot`, at least `at_least` and above every generation any runtime of
// this process has issued or restored for it, and records it. 0 when none is left (the slot has
// reached ActorRef::kMaxGeneration here): the caller retires the slot.
std::uint32_t claim_slot_generation(std::uint32_t slot, std::uint32_t at_least) noexcept;

// Records that a restore brought back `generation` of `slot`, so that no later claim issues it.
void note_slot_generation(std::uint32_t slot, std::uint32_t generation) noexcept;

}  // namespace reheap::detail
