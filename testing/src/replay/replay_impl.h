// Replay::Impl: what an open replay holds (see replay.h): the log read whole, the snapshots it
// may start from, the restored heap and its reactor, the replay host, and where it stands.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../exclusive_use.h"
#include "reheap/heap.h"
#include "reheap/testing/replay.h"
#include "replay/chunk_plan.h"    // runtime/src
#include "replay/recorded_input.h"  // runtime/src
#include "replay/recorded_log.h"  // runtime/src
#include "replay/replay_host.h"   // runtime/src

namespace reheap::testing {

namespace detail {

// The runtime's replay engine (runtime/src/replay/), which an exact restart uses too.
using reheap::detail::replay::AbortEvent;
using reheap::detail::replay::ArmedTimer;
using reheap::detail::replay::CallMismatch;
using reheap::detail::replay::ChunkPlan;
using reheap::detail::replay::DivergenceNote;
using reheap::detail::replay::RecordedInput;
using reheap::detail::replay::RecordedLog;
using reheap::detail::replay::RecordedLogEvent;
using reheap::detail::replay::ReplayHost;
using reheap::detail::replay::ReplayHostOptions;
using reheap::detail::replay::SentMessage;
using reheap::detail::replay::describe_input;
using reheap::detail::replay::read_bundle_log;
using reheap::detail::replay::read_recorded_log;
using reheap::detail::replay::rewrite_outside_state;
using reheap::detail::replay::throw_refusal;

// A snapshot a replay can restore: the anchor or one of ReplayOptions::snapshots.
struct StartPoint {
  std::filesystem::path file;
  std::uint64_t events = 0;  // the reactor's event count in it
};

}  // namespace detail

struct Replay::Impl {
  detail::ExclusiveUse use;  // step, run, seek and continue_in enter it
  std::filesystem::path path;  // what open() was given
  ReplayOptions options;
  detail::RecordedLog log;
  std::vector<detail::StartPoint> starts;  // ascending by events; the anchor among them
  std::vector<RecordedEvent> events;
  std::optional<std::uint64_t> failing_event;
  std::vector<std::string> warnings;
  bool compare_state = false;
  bool portable_digests = false;  // the log's digests are state_digest's (format version 5 on)
  std::string state_note;  // why state digests are not compared, if they are not

  HeapPtr heap;
  Reactor* reactor = nullptr;
  std::unique_ptr<detail::ReplayHost> host;
  std::unique_ptr<detail::ChunkPlan> chunks;  // attached to `heap` while the replay holds it
  std::vector<ReplayedSend> sends;  // every send replayed so far (taken from the host's)
  std::uint64_t position = 0;
  std::optional<std::uint64_t> last_state_match;  // the last event whose digest compared equal
  std::string stopped;  // why step() refuses: a divergence or a failure happened ("" if none)
  std::chrono::nanoseconds last_seek{0};
  std::optional<std::uint64_t> last_seek_restored;

  // Destroys the current heap (if any) and restores `start`, then makes its outside state (saved
  // timers and sockets) the host's, as a worker does when it anchors a recording.
  void restore(const detail::StartPoint& start);
  // Delivers the event after `position` (which must exist). Throws Divergence, ReplayedFailure.
  void deliver_next();
  // Moves what the host sent during the last event into `sends`.
  void take_sends();
  [[noreturn]] void throw_divergence(DivergenceKind kind, const std::string& expected, const std::string& actual,
                                     const detail::RecordedLogEvent& e);
  std::string state_line() const;
  // The pages of the heap that differ from a recorded snapshot after `event`, or why unknown.
  std::string page_differences(std::uint64_t event);
};

}  // namespace reheap::testing
