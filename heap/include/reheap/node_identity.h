// NodeIdentity: which process this is, among the processes that exchange snapshots.
//
// Snapshots travel: a heap saved by one process is restored, at the same addresses, in another,
// next to heaps that process made itself. Two numbers keep them apart. The node id (0..63) is
// given to each process of a group by its operator (REHEAP_NODE, ZoneConfig::node or
// RuntimeConfig::node; default 0): heaps a process creates take their chunks from its node's
// slice of the zone, so the heaps of processes with different node ids never want the same
// addresses while each stays within its slice (see zone.h). The incarnation (18 bits) tells apart
// the successive processes of one node: it comes from a counter kept in a state directory
// (REHEAP_STATE_DIR or the config's state_dir; the counter is per node, so nodes may share the
// directory), which makes it unique for 2^18 starts of the node, after which it wraps; without a
// state directory it is random (getrandom), so two given starts of a node get the same
// incarnation with probability 2^-18, and among k starts some two do with probability about
// 1 - exp(-k^2 / 2^19) (1.9% for 100 starts, 16% for 300): configure a state directory where it
// matters. The state directory also keeps the node's registry of saved snapshots
// (`node-<n>.snapshots`), whose files' chunks the node's later heaps keep out of (zone.h, "Held for
// restore"): without one, a restarted node may create heaps where its saved snapshots need to go.
// The runtime puts both in every ActorRef it mints (runtime/include/reheap/actor_ref.h), so that
// no two processes hand out the same reference.
//
// The identity is one per process (every Runtime of the process shares it) and settles once, at
// the first of: the zone's reservation (the first heap created or restored), a Runtime's
// construction, or a call of NodeIdentity::current(). Configuration given after that must agree
// with it (else std::logic_error): set the node before the first heap.
//
// Thread safety: every function here may be called from any thread.
#pragma once

#include <cstdint>
#include <filesystem>

namespace reheap {

struct NodeIdentityConfig {
  int node = -1;                    // 0..kMaxNodes-1; -1: REHEAP_NODE, or 0 if unset
  std::filesystem::path state_dir;  // empty: REHEAP_STATE_DIR, or none (random incarnation)
};

struct NodeIdentity {
  static constexpr unsigned kNodeBits = 6;
  static constexpr unsigned kIncarnationBits = 18;
  static constexpr std::uint32_t kMaxNodes = std::uint32_t{1} << kNodeBits;
  static constexpr std::uint32_t kIncarnations = std::uint32_t{1} << kIncarnationBits;

  std::uint32_t node = 0;         // < kMaxNodes
  std::uint32_t incarnation = 0;  // < kIncarnations
  bool counted = false;           // from a state directory's counter (else random)

  // The 24-bit origin an ActorRef carries: the node above the incarnation.
  constexpr std::uint32_t origin() const noexcept { return node << kIncarnationBits | incarnation; }

  // The process's identity, settling it from the configuration given so far and the environment
  // if that has not happened yet. Throws std::invalid_argument for a malformed REHEAP_NODE and
  // std::system_error when the state directory cannot keep the counter (the message names it).
  static NodeIdentity current();
  // True once the identity is settled.
  static bool settled() noexcept;
  // Records what the process's identity should be (the fields left at their defaults change
  // nothing). Before the identity settles it only records; afterwards it throws
  // std::logic_error if the request differs from the settled identity.
  static void configure(const NodeIdentityConfig& config);

  // Takes the next incarnation of `node` from the counter in `state_dir` (created if missing):
  // under an exclusive flock, reads the file `node-<node>.incarnation`, writes the next value to
  // a temporary file, fsyncs it, renames it over the old one and fsyncs the directory, so that a
  // crash at any point never hands out a value twice. Returns the value read (0 the first time),
  // modulo kIncarnations. Throws std::system_error naming the directory if any step fails.
  static std::uint32_t next_incarnation(const std::filesystem::path& state_dir, std::uint32_t node);
};

}  // namespace reheap
