// Replay: a recorded reactor, restored in a test and fed its recording again, one event at a time.
//
// What it is. A recording (reheap/recording.h) is an anchor - a snapshot of a reactor's heap
// between two events - and a log of every event the reactor got after it and every answer its
// host gave (the time, random seeds, SendResults, children's references, socket ids). Replay
// restores the anchor in this process (the test binary, not the one that recorded: a restore in
// another build relocates the heap's pointers into the program), on the test's thread, with no
// runtime and no worker, and delivers the log's events through the same door as a worker does
// (the reactor's heap current, the event counted in its heap, the hook called). Its host answers
// every question from the log and compares every output with the recorded one, so the reactor
// runs again exactly as it did (DETERMINISM.md) - or the replay says where it did not.
//
// Data model. Events are numbered as in the recording (RECORDING_FORMAT.md, "Event indices"):
// the first event after an anchor taken with n events behind it is n + 1. position() is the index
// of the last event delivered (the anchor's count before the first step); recorded_events() is
// the index of the log's last event. Between steps the test reads the reactor (reactor<R>()) and
// its heap (heap()), as it would in a TestRuntime.
//
// Divergence. Each output (a send, a timer started or cancelled, a spawn, a stop, a socket
// operation) and each question (now, a seed, the worker) must be the recorded one, of the same
// kind, in the same order; a send's type, target and payload digest (or bytes, when the recording
// kept payloads: RecordedOutputs::kPayloads) are compared. With the state oracle
// (RecordingOptions::state_hash_every), the heap's digest after an event is compared with the
// recorded one. The first difference throws Divergence, which names the event (index and kind),
// what was expected and what happened (for messages: the type, the target and the decoded
// msgpack rendered as text), and how to reproduce it; nothing after it is delivered. For a state
// difference it names the last event whose digest matched and, when ReplayOptions::snapshots
// holds a snapshot of the recorded reactor after the diverging event, the pages that differ from
// it and the offsets of their differing bytes.
// State digests (recording format version 5 on: reheap::state_digest) name the heap's pointers
// into the program by symbol, so they are compared in any binary the recording restores into: the
// recording process, another run of it, or a test binary linking the recorded code. A log of an
// older version holds digests of the raw bytes, compared only when this process's program layout
// is the recording one (the same binary at the same addresses, e.g. with ASLR off). warnings()
// says when the comparison is off and why.
//
// Failures. An event whose recorded hook threw (a crash bundle's last event) is replayed too: if
// the hook throws again, the replay throws ReplayedFailure (a ReactorFailure: EXPECT_THROW(...,
// reheap::testing::ReactorFailure) catches it) with the recorded and the actual what(), naming the
// reactor's C++ type and the exception's (not the reactor's SpawnOptions name: a recording does not
// keep it); if it returns - a fixed build replaying the bug's recording - the event simply passes.
// During that event outputs are not compared (the recorded hook stopped where it threw, so what it
// would have done next is unknown): calls get the recorded answers while they follow the recording,
// and defaults after (the last time answered, seeds of a fixed stream, kOk for a send, a null
// reference for a spawn; socket operations throw std::logic_error). ReplayOptions::check_outputs =
// false answers every event that way.
// A hook that throws on an event that did not fail in the recording is a Divergence.
//
// After the log. A replay can hand its reactor to a TestRuntime (continue_in), at the end of the
// log or before it (the events after position() are then not delivered): from there on the test
// sends it messages, advances the virtual clock to fire its timers and delivers socket events
// with the TestRuntime's own operations, and the outputs go to that runtime. Timers the reactor had armed at the end of the log are re-armed there with their
// full delay from the hand-over (the log does not say how much of it had run); the children it
// spawned during the recording do not exist there (sends to them answer kNoSuchReactor).
//
// Seek. seek(event) moves to any event between the anchor's count and recorded_events(): it
// restores the nearest snapshot at or before it - the anchor, or one of ReplayOptions::snapshots
// (snapshots of the same reactor taken during the recording, e.g. by request_snapshot or
// Runtime::snapshot, whose heap names the recording) - and replays forward. last_seek_duration()
// says how long that took.
//
// Errors. open() throws RecordingError for a log that is truncated (kTruncated), damaged
// (kCorrupt: a checksum), not a log (kNotARecording), of another format version (kVersion), or not
// the continuation of the snapshot (kMismatch: another recording id, another reactor, another
// event count), and SnapshotError for an anchor that does not restore; each names the file. A
// crash bundle is held to its manifest (read as a regular file of at most 1 MiB, every field
// checked): its log must be of the manifest's build, recording and reactor (kMismatch) and must
// reach the failing event the manifest names and mark it failed (kIncomplete otherwise, also for
// a log cut short at a block boundary or inside a block), so that a bundle cut short never replays
// as a pass. A file of a recording that is not a regular file (a FIFO, a directory, a link to
// /dev/zero) is refused by its type without blocking (kIo). A log
// written by another build of the program is replayed (a fixed build must replay the recording of
// the broken one) and reported: recorded_by_build() vs program_build_id() and a line in warnings();
// ReplayOptions::refuse_other_build turns it into RecordingError kMismatch.
//
// Addresses: a restored heap comes back at its recorded addresses, so a process holds one heap of
// a recording at a time: a replay in the recording process needs the recorded reactor gone (its
// runtime shut down), and two Replays of one recording cannot be open at once (restore says so).
// The zone chunks the heap took during the log (its first page run or huge block, a size class
// past 2 MiB) are taken again, exactly, at the same point of the same event (RECORDING_FORMAT.md,
// "Chunks"), whatever else this process's zone holds; one that a live heap of this process holds
// stops the replay at that event with RecordingError kChunkInUse (naming the chunk, the heap and
// the event), and one outside its half of the zone with kCorrupt: the replay never takes another
// heap's memory. A log of format version 1 does not say where chunks went: they are placed as for
// any heap, and warnings() says so. After continue_in, the zone places the reactor's chunks.
//
// Threading: a Replay runs its reactor on the calling thread and is not thread-safe. A thread
// calling step, run, run_to, run_until, seek or continue_in while another thread is inside one of
// them gets std::logic_error naming both, and nothing changes; one thread after another may use it.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "reheap/actor_ref.h"
#include "reheap/event.h"
#include "reheap/heap.h"
#include "reheap/message.h"
#include "reheap/reactor.h"
#include "reheap/recording_log.h"  // RecordingError, program_build_id
#include "reheap/testing/reactor_failure.h"
#include "reheap/testing/test_runtime.h"

namespace reheap::testing {

struct ReplayOptions {
  // The snapshot to start from: "" takes the recording's anchor (base-<n>.snap; the one with the
  // largest n when a directory holds several).
  std::filesystem::path anchor{};
  // More snapshots of the same reactor, taken during the recording, for seek(). open() reads
  // which reactor and event each holds from its run records and the reactor's own page, and
  // refuses another recording's; their other pages are checked when a seek restores one.
  std::vector<std::filesystem::path> snapshots{};
  bool check_outputs = true;  // compare outputs and questions with the recorded ones
  bool check_state = true;    // compare state digests (when the recording has them; see above)
  // A log recorded by another build is replayed with a warning unless this is set.
  bool refuse_other_build = false;
};

enum class DivergenceKind : std::uint8_t {
  kOutput,         // an output or a question other than the recorded one
  kMissingOutput,  // the hook returned before making a recorded output or asking a question
  kExtraOutput,    // the hook made an output or asked a question after the recorded ones
  kState,          // the heap after the event is not the recorded one (state oracle)
  kFailure,        // the hook threw where the recording's did not
};
const char* to_string(DivergenceKind kind) noexcept;

class Divergence : public std::runtime_error {
 public:
  Divergence(DivergenceKind kind, std::uint64_t event, EventKind event_kind, std::string expected,
             std::string actual, const std::string& report);
  DivergenceKind kind() const noexcept { return kind_; }
  std::uint64_t event() const noexcept { return event_; }         // the event's index
  EventKind event_kind() const noexcept { return event_kind_; }
  const std::string& expected() const noexcept { return expected_; }  // as recorded, readable
  const std::string& actual() const noexcept { return actual_; }      // as replayed, readable

 private:
  DivergenceKind kind_;
  std::uint64_t event_;
  EventKind event_kind_;
  std::string expected_;
  std::string actual_;
};

// A recorded failure, replayed: the hook threw again at the event whose recorded hook threw.
class ReplayedFailure : public ReactorFailure {
 public:
  ReplayedFailure(Details details, std::uint64_t event, std::string recorded_hook, std::string recorded_what)
      : ReactorFailure(std::move(details)),
        event_(event),
        recorded_hook_(std::move(recorded_hook)),
        recorded_what_(std::move(recorded_what)) {}
  std::uint64_t event() const noexcept { return event_; }
  const std::string& recorded_hook() const noexcept { return recorded_hook_; }
  const std::string& recorded_what() const noexcept { return recorded_what_; }

 private:
  std::uint64_t event_;
  std::string recorded_hook_;
  std::string recorded_what_;
};

// One event of the log, as recorded (payloads are not kept here; position() and the reactor say
// what it did).
struct RecordedEvent {
  std::uint64_t index = 0;
  EventKind kind = EventKind::kStart;
  ActorRef sender{};          // kMessage
  std::uint64_t type_id = 0;  // kMessage
  std::uint64_t timer = 0;    // kTimer
  std::uint64_t socket = 0;   // socket events
  bool failed = false;        // its recorded hook threw, or a fatal signal ended it
};

// A message the replayed reactor sent (with the recorded answer it got).
struct ReplayedSend {
  std::uint64_t event = 0;
  ActorRef to{};
  std::uint64_t type_id = 0;
  Encoding encoding = Encoding::kRaw;
  std::vector<char> payload;
  SendResult result = SendResult::kOk;
};

class Replay {
 public:
  // `path`: a recording directory (reactor-<ref>/: its anchor and log segments; restart-<k>/ is
  // one too), or a crash bundle (crash-<event>/, with manifest.json). Restores the anchor and
  // checks that the log belongs to it; delivers nothing yet.
  static Replay open(const std::filesystem::path& path, const ReplayOptions& options = {});
  ~Replay();
  Replay(Replay&&) noexcept;
  Replay& operator=(Replay&&) noexcept;

  // ---- what was opened ----
  ActorRef reactor_ref() const noexcept;
  std::uint64_t recording_id() const noexcept;
  const std::string& recorded_by_build() const noexcept;  // compare with program_build_id()
  bool same_build() const noexcept;
  std::uint64_t anchor_events() const noexcept;    // events before the anchor
  std::uint64_t recorded_events() const noexcept;  // the index of the log's last event
  const std::vector<RecordedEvent>& events() const noexcept;  // anchor_events()+1 .. recorded_events()
  // The event whose recorded hook threw, or that ended the recording process with a fatal signal
  // (its recorded what() then reads "fatal signal SIGSEGV ..."). Such an event recurs as the
  // signal when stepped, ending this process: run_to(*failing_event() - 1) stops before it, and a
  // death test steps it.
  std::optional<std::uint64_t> failing_event() const noexcept;
  bool compares_state() const noexcept;  // the log has digests and this layout can compare them
  const std::vector<std::string>& warnings() const noexcept;

  // ---- driving ----
  // Delivers the next recorded event; false (nothing delivered) when the log is exhausted.
  // Throws Divergence, ReplayedFailure; after either, the replay stays at the failing event and
  // cannot step further (seek() back is allowed).
  bool step();
  std::uint64_t run();  // steps to the end of the log; returns the events delivered
  // Steps until position() == event (throws std::out_of_range beyond the log, std::logic_error if
  // it is already past: seek() goes back).
  void run_to(std::uint64_t event);
  // Steps until pred() holds (checked before each step) or the log ends; returns pred().
  bool run_until(const std::function<bool()>& pred);
  std::uint64_t position() const noexcept;
  bool at_end() const noexcept;

  // Restores the nearest snapshot at or before `event` and replays forward to it.
  void seek(std::uint64_t event);
  std::chrono::nanoseconds last_seek_duration() const noexcept;
  // The event count of the snapshot the last seek restored; nullopt when it went forward from
  // where the replay stood (no snapshot was nearer), or before any seek.
  std::optional<std::uint64_t> last_seek_restored() const noexcept;

  // ---- the reactor between steps ----
  // The replayed reactor as R: std::bad_cast if it is not an R (as TestRuntime::reactor).
  template <class R>
  R& reactor() {
    return dynamic_cast<R&>(reactor_base());
  }
  Reactor& reactor_base();
  Heap& heap();
  const std::vector<ReplayedSend>& sends() const noexcept;  // every send replayed so far

  // ---- after the log ----
  // Hands the reactor, as it stands at position(), to `runtime` under its recorded reference (see
  // "After the log"); the replay is then empty (reactor_base() throws std::logic_error). Throws
  // std::logic_error if the replay stopped at a divergence or a failure.
  ActorRef continue_in(TestRuntime& runtime);

 private:
  struct Impl;
  explicit Replay(std::unique_ptr<Impl> impl) noexcept;
  std::unique_ptr<Impl> impl_;
};

// For a program's own main(), so that its reactor types are linked: when the program is started
// by `reheap-snap replay BUNDLE` (the environment variable REHEAP_REPLAY names the bundle), replays
// the bundle, prints the outcome (the failing event's index, hook and what(), or the divergence)
// and returns the exit status to return from main: 0 when the replay ran to its end without a
// failure, 1 when the recorded failure recurred, 2 on a divergence, 3 on an error, 4 when the
// bundle is incomplete (RecordingErrc::kIncomplete: its log does not reach, or does not mark, the
// failing event its manifest names - a cut bundle, which must never pass for a fixed program).
// Returns nullopt when the program was not started to replay.
//   int main(int argc, char** argv) {
//     if (auto status = reheap::testing::replay_main_if_asked(argc, argv)) return *status;
//     ...
std::optional<int> replay_main_if_asked(int argc, char** argv);

}  // namespace reheap::testing
