// Recording: a reactor's inputs, written down so that its behaviour can be replayed.
//
// A reactor is a function of its heap and its inputs (event.h): the events that reach it and
// the answers its host gives (the time, seeds, SendResults, socket ids). A recorded reactor gets
// an anchor - a snapshot of its heap between two events - and, from there on, a log of every
// event and every answer, in order (RECORDING_FORMAT.md). Restoring the anchor and feeding the
// log back reproduces the reactor's run, up to and including a failing event.
//
// Modes:
//   kFile  the anchor is a snapshot file `base-<events>.snap` and the log goes to append-only
//          segments `log-<first event>.rlog`, in `directory/reactor-<ActorRef value>/`. A
//          failed write (a full disk) stops the recording of that reactor (counted in
//          ReactorStats::recording_errors); the reactor runs on and earlier blocks stay valid.
//          When the log since the anchor passes `anchor_every_bytes`, a new anchor is taken
//          (between two events) and the older anchor and its segments are deleted, so that the
//          directory holds one anchor and at most about that many bytes of log: a recording can
//          run for as long as the reactor does. Crash bundles hard-link their files and keep them.
//   kRing  a flight recorder in memory: the anchor is an in-memory checkpoint and the log holds
//          what happened since; when the log grows past `ring_bytes`, a new checkpoint replaces
//          the old one with its log. Runtime::dump_recording writes both out.
// In both modes a failing event (a hook that threw) leaves a crash bundle in
// `directory/reactor-<ref>/crash-<event>/`: the anchor, the log up to and including the failing
// event, and manifest.json. So does an event that ends the process with a fatal signal (SIGSEGV,
// SIGBUS, SIGFPE, SIGILL, SIGABRT, a stack overflow): the first recorder installs handlers for
// them, which write the bundle (its failure reads "fatal signal SIGSEGV (...) at address ...")
// and then hand the signal on to the handler installed before, so the process dies as it would
// have. A process killed otherwise (SIGKILL, a fault outside a recorded event) leaves no bundle.
// The program's own handler for these signals, installed before the first recorder, runs before
// the bundle is written, so that a fault it repairs is no crash; one installed after replaces
// reheap's, and no bundle is written then.
//
// What a dying process keeps. Whenever one of those signals ends the process (a recorded event's
// or not), every other recorded reactor's log is written up to its last whole event first, with
// async-signal-safe calls, even for a reactor in the middle of an event on another worker; and
// every ring with a directory is written out, anchor and log, into
// `directory/reactor-<ref>/ring-<its last whole event>/`, where Replay opens it. A process killed
// outright (SIGKILL, the OOM killer) runs no handler: a file log then keeps what reached its file,
// which is at most `flush_interval` behind (the worker writes the block a recorder holds that long
// after its first event in it; blocks are also written when full, before snapshots, and when the
// worker idles), and a ring is lost. Either way a log ends at an event's end as far as a replay
// can tell: a block written in the middle of a long event says so, and a log cut inside an event
// replays up to the event before and says where it ends (RECORDING_FORMAT.md, "Blocks").
//
// What the runtime answers is always recorded; what the reactor outputs (sends, writes) is
// recorded as a digest by default, which lets a replay check that it produces the same outputs.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace reheap {

enum class RecordingMode : std::uint8_t {
  kInherit,  // SpawnOptions only: the runtime's default (RuntimeConfig::recording)
  kOff,
  kFile,
  kRing,
};

// How much of each output is kept (the answers to it are always kept).
enum class RecordedOutputs : std::uint8_t {
  kAnswersOnly,  // the answer (a SendResult, a write's result), not what was sent
  kDigests,      // plus a 64-bit digest (XXH3) of the payload
  kPayloads,     // plus the payload itself
};

inline constexpr std::size_t kDefaultRingBytes = std::size_t{8} << 20;
inline constexpr std::size_t kDefaultSegmentBytes = std::size_t{64} << 20;
inline constexpr std::size_t kDefaultAnchorEveryBytes = std::size_t{256} << 20;

struct RecordingOptions {
  RecordingMode mode = RecordingMode::kInherit;
  // kFile: required; kRing: where crash bundles go ("" none). Created if missing; a spawn or
  // restore whose recording has no usable directory throws std::invalid_argument.
  std::filesystem::path directory{};
  std::size_t ring_bytes = kDefaultRingBytes;        // kRing: the log's bound before a checkpoint
  std::size_t segment_bytes = kDefaultSegmentBytes;  // kFile: a segment rolls past this size
  // kFile: a new anchor replaces the old one and its log once the log passes this size (0: never;
  // the recording then keeps everything from its first anchor on).
  std::size_t anchor_every_bytes = kDefaultAnchorEveryBytes;
  RecordedOutputs outputs = RecordedOutputs::kDigests;
  // Every this many events a 64-bit hash of the reactor's used heap pages is written (0: never),
  // so that a replay can tell where its state first departs from the recorded one.
  std::uint32_t state_hash_every = 0;
  // kFile: records reach the log file at most this long after their event ended (the worker
  // writes the block held then), so that a process killed outright (SIGKILL, the OOM killer)
  // loses at most this much of its recordings; 0: only when a block is full, before snapshots and
  // when the worker idles. Each write costs one write(2) per recorded reactor that had events.
  std::chrono::milliseconds flush_interval{1000};
};

// RecordingOptions with mode kOff (RuntimeConfig's default).
inline RecordingOptions recording_off() {
  RecordingOptions options;
  options.mode = RecordingMode::kOff;
  return options;
}

}  // namespace reheap
