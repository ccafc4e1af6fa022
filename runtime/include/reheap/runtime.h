// Runtime: worker threads, each running one libuv loop, and the reactors that run on them.
//
// Data model: the runtime keeps one cell per reactor (process memory, never in a reactor heap):
// its heap, its mailbox (a lock-free multi-producer queue of envelopes), its timers and sockets,
// its statistics, and the worker it runs on. A reactor is scheduled on its worker when a
// message reaches an empty mailbox; the worker runs ready reactors in FIFO order, each for a
// batch of messages, between its I/O polls (reactors made ready by those runs run in further
// passes, up to 256 runs per turn, before the next poll). One exception to the FIFO order: a
// reactor that one run of another reactor on its worker sent a batch of messages or more runs
// right after that run, working off its backlog (up to 2^18 messages, 5-10 ms), so that a
// consumer keeps pace with producers that share its worker (worker.h, "Catching up").
//
// Placement: a reactor spawned without a worker (SpawnOptions::worker = kAnyWorker) starts on
// the next worker round robin and may be moved between two of its events. With
// RuntimeConfig::placement = kLocality (the default), a pair of reactors that mostly message each
// other (each receives at least 3/4 of its last 64 messages from the other) is brought onto one
// worker: the one with the smaller ActorRef moves to its partner's worker, or its partner comes
// over when its own worker holds fewer reactors. A reactor that moved stays at least 100 ms, and
// moves at most 4 times a second; fan-in and fan-out (one reactor talking with many) move
// nothing. A reactor is pinned, and never moved by the policy, if it was given a worker
// (SpawnOptions::worker, ReactorRestoreOptions::worker) or moved with Runtime::move; reactors with
// open sockets stay too. RuntimeStats::placement_moves and ReactorStats::moves / worker show what
// happened. Moves keep per-sender order and change nothing a reactor observes but worker().
//
// Sending: every message goes through the receiver's mailbox, so per-sender FIFO order holds
// whatever the threads: two messages from one sender (a reactor, or one outside thread) to one
// receiver are handled in the order they were sent, also across a move of either of them.
// Nothing is ordered between different senders. A send to a reactor on the sender's own worker
// makes no system call: the receiver goes on the worker's local ready list. A send to another
// worker pushes the receiver on that worker's lock-free run queue and, only if the worker sleeps,
// wakes it through an eventfd watched by uv_poll (one wake-up covers every message sent until the
// worker runs).
//
// Threads: Runtime's member functions may be called from any thread that is not one of its
// workers, unless noted (the blocking ones would deadlock there and throw std::logic_error).
// Reactors use the operations of Reactor instead, and runtime() for spawning.
//
// Shutdown (shutdown() or the destructor): new sends from outside and spawns are refused, the
// listeners close, the reactors' mailboxes drain (up to drain_timeout: reactors may keep sending
// each other messages), then every reactor gets on_stop and is destroyed with its heap, the
// messages still in flight are freed, and the threads are joined.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

// Each for a type the declarations below use: the reactors' base and its spawn arguments, the
// reference, message and send result, the configuration's parts (time sources, recording,
// supervision, node identity), and the results of snapshot, checkpoint_process and stats.
#include "reheap/actor_ref.h"
#include "reheap/heap.h"             // HeapPtr
#include "reheap/heap_scope.h"       // ask decodes its reply with no heap current
#include "reheap/message.h"          // SendResult, encoding
#include "reheap/node_identity.h"    // NodeIdentity
#include "reheap/process_checkpoint.h"
#include "reheap/program_layout.h"   // LayoutCheck
#include "reheap/reactor.h"
#include "reheap/reactor_stats.h"
#include "reheap/recording.h"        // RecordingOptions
#include "reheap/snapshot.h"         // SnapshotInfo
#include "reheap/spawn_options.h"
#include "reheap/supervision.h"      // ReactorFailed
#include "reheap/time_source.h"

namespace reheap {

enum class Placement : std::uint8_t { kLocality, kFixed };

// A message type a reactor type has no handler for, reported the first time one reaches a
// reactor of that type (RuntimeConfig::on_unhandled).
struct UnhandledMessage {
  ActorRef reactor;                // the reactor that got it first
  std::string reactor_type;        // its C++ class, demangled
  std::uint64_t message_type_id = 0;
  std::string message_type;        // message_type_name_of, or "type id 0x..." if unknown
};

struct RuntimeConfig {
  int workers = 0;  // 0: the number of CPUs
  // Messages a reactor handles per turn before the worker moves to the next ready reactor. Each
  // turn polls I/O once (an epoll_wait and clock reads), so a streaming receiver pays that per
  // batch: a larger batch raises its rate and lengthens the time between a busy reactor's I/O
  // polls (docs/benchmarks.md, "Runtime settings").
  std::uint32_t batch = 256;
  // Before sleeping, a worker with no work polls its run queue this long (0: never spins).
  // Spinning trades CPU for latency across threads: a sleeping worker must be woken (tens of
  // microseconds on a VM), a spinning one notices a message in well under 1 us. Pin the workers
  // when spinning: unpinned, the scheduler may put two spinning workers on one CPU, where each
  // spin delays the other.
  std::chrono::microseconds spin{0};
  // Pins worker i to CPU i modulo the CPUs this process may run on (sched_getaffinity order).
  bool pin_workers = false;
  // kLocality: the runtime brings chatty pairs of unpinned reactors onto one worker (see the top
  // of this file); kFixed: a reactor stays where it was spawned until Runtime::move.
  Placement placement = Placement::kLocality;
  std::chrono::milliseconds drain_timeout{5'000};
  // Called on the failing reactor's worker thread, with no heap current. Must not block. Left
  // empty, a failure whose reactor has no SpawnOptions::supervisor either is printed on stderr
  // (one line: the reactor, the hook, the exception, stopped or restarted).
  std::function<void(const ReactorFailed&)> on_failure{};
  // A message no handler took (Reactor::on_unhandled's default), once per reactor type and
  // message type in this runtime, on the reactor's worker with no heap current; must not block.
  // Left empty, it is printed on stderr (one line naming both types). Every one is counted in
  // ReactorStats::unhandled either way.
  std::function<void(const UnhandledMessage&)> on_unhandled{};
  // The process's node identity (node_identity.h), which every ActorRef minted here carries and
  // which decides where the process's heaps lie in the zone: the node id (0..63; -1: REHEAP_NODE,
  // or 0) and a directory keeping the node's incarnation counter and the registry of the
  // snapshots it saved, whose chunks its later reactors keep out of so that Runtime::restore
  // finds them free after spawns (empty: REHEAP_STATE_DIR, or a random incarnation and nothing
  // held; zone.h, "Held for restore"). The identity is the process's, settled by its first heap
  // or runtime: a later runtime asking for another one throws std::logic_error.
  int node = -1;
  std::filesystem::path state_dir{};
  // Where reactors read the time (Reactor::now) and their random seeds (Reactor::random); null:
  // the system's clocks and getrandom(2). See time_source.h.
  std::shared_ptr<TimeSource> time{};
  std::shared_ptr<EntropySource> entropy{};
  // The recording of reactors whose SpawnOptions::recording (or ReactorRestoreOptions::spawn's)
  // says kInherit (recording.h). Off by default.
  RecordingOptions recording = recording_off();
};

struct RuntimeStats {
  std::size_t reactors = 0;
  std::uint64_t messages_in_flight = 0;  // sent and not yet handled or dropped
  std::uint64_t dead_letters = 0;        // dropped: the receiver stopped with them queued
  std::uint64_t failures = 0;
  std::uint64_t wakeups = 0;             // eventfd writes to sleeping workers
  std::uint64_t recording_errors = 0;    // recordings stopped by an error (a full disk, ...)
  std::uint64_t accept_errors = 0;       // connections a listener failed to accept (on_accept_error)
  std::uint64_t placement_moves = 0;     // moves the placement policy made (not Runtime::move's)
  // Times a worker gave freed memory back to the OS after sleeping half a second since its
  // reactors last ran (zone.h, "Retention"); once per such idle spell, however often it is woken.
  std::uint64_t idle_purges = 0;
};

struct ReactorRestoreOptions {
  int worker = kAnyWorker;  // pinned to this worker, or placed like a spawn (spawn_options.h)
  SpawnOptions spawn;  // mailbox, policy, supervisor, name of the restored reactor
  LayoutCheck layout = LayoutCheck::kRelocate;
};

namespace detail {
class RuntimeImpl;
class LiveHost;
SendResult send_outside(RuntimeImpl* runtime, ActorRef to, Envelope* e,
                        SendResult encode_result) noexcept;
}  // namespace detail

class Runtime {
 public:
  explicit Runtime(RuntimeConfig config = {});
  ~Runtime();  // shutdown()
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  int workers() const noexcept;

  // Creates a heap, constructs R(args...) in it on the calling thread (the constructor's
  // exceptions propagate, leaving no reactor behind; the heap goes at once, unless the exception
  // holds memory of it, like std::runtime_error's message: then it goes with the runtime), and
  // starts it on its worker: on_start runs there before any message. Callable from any thread,
  // reactors included, though a reactor should use Reactor::spawn, which a recording records
  // (DETERMINISM.md).
  // Arguments are copied into the new heap by R's constructor; they must not point into another
  // reactor's heap. Throws std::logic_error if the reactor was not built in its heap: the program
  // does not link reheap::global_new (or defines its own global operator new).
  template <class R, class... Args>
  ActorRef spawn(const SpawnOptions& options, Args&&... args) {
    static_assert(std::is_base_of_v<Reactor, R>, "R must derive from reheap::Reactor");
    std::tuple<Args&&...> arguments(std::forward<Args>(args)...);
    return spawn_constructed(options, &detail::construct_packed<R, Args...>, &arguments);
  }
  template <class R, class... Args>
    requires(!detail::kFirstIsSpawnOptions<Args...>)
  ActorRef spawn(Args&&... args) {
    return spawn<R>(SpawnOptions{}, std::forward<Args>(args)...);
  }

  // From a thread outside the runtime (main, a test). Sender is null.
  template <class T>
  SendResult send(ActorRef to, const T& value) {
    SendResult result = SendResult::kOk;
    detail::Envelope* e = detail::encode(value, &result);
    return detail::send_outside(impl_.get(), to, e, result);
  }

  // Asks a reactor from a thread outside the runtime and blocks for the answer: a reactor spawned
  // for this call (the asker, named "ask") sends `request` to `to` with Reactor::request
  // (request.h), and the thread waits until its outcome, or `timeout` passes. The asked reactor
  // answers with reply(), or with a plain send of a Reply to sender(), in the handler or later;
  // the asker ignores messages of other types. Returns the reply; nullopt if none came in time,
  // the runtime shut down meanwhile, or the request was refused: `*sent` (if given) says which
  // (kOk: it was delivered; else why not: kNoSuchReactor, kMailboxFull, kShuttingDown, ...). A
  // reply that does not decode as Reply throws MessageError. The asker stops when ask returns: a
  // later answer is dropped. Each call spawns and stops a reactor on the asked reactor's worker,
  // and the calling thread spins up to 0.1 ms for the answer before it sleeps: it is for main,
  // tests, tools and admin paths, not a reactor's hot path (docs/benchmarks.md, "Ask"). A reactor
  // uses Reactor::request instead; on a worker ask throws std::logic_error.
  template <class Reply, class Request>
  std::optional<Reply> ask(ActorRef to, const Request& request,
                           std::chrono::nanoseconds timeout = std::chrono::seconds(1),
                           SendResult* sent = nullptr) {
    HeapScope system(nullptr);  // the reply is process memory, whatever is current
    std::optional<Reply> reply;
    SendResult encoded = SendResult::kOk;
    detail::Envelope* e = detail::encode(request, &encoded);
    if (!ask_erased(to, e, encoded, message_type_id<Reply>(), &decode_reply<Reply>, &reply, timeout, sent)) {
      return std::nullopt;
    }
    return reply;
  }

  // Asks the reactor to stop: it handles the messages sent to it before, then on_stop. Returns
  // false if no such reactor lives.
  bool stop(ActorRef ref);

  // Blocks until the reactor is gone (or the timeout passes: false).
  bool wait_stopped(ActorRef ref, std::chrono::milliseconds timeout = std::chrono::seconds(10));

  bool alive(ActorRef ref) const noexcept;

  // Blocks until no message is in flight, no reactor is ready, and every stop and failure under
  // way has settled: the reactor is gone, or restarted, and the failure reported (timers and
  // sockets may still bring more). False on timeout.
  bool wait_idle(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // Saves the reactor's heap to `file` between two of its events, without stopping other
  // reactors (crash-safe, see snapshot.h). Blocking. Ordered like a message from the calling
  // thread: the reactor is saved after its on_start (or a restore's on_restored) and after every
  // message this thread sent it before the call. The restart policy uses the newest file.
  // Reactors use Reactor::request_snapshot instead, which does not block (snapshot_request.h);
  // both build on one chain per reactor.
  SnapshotInfo snapshot(ActorRef ref, const std::filesystem::path& file);
  SnapshotInfo snapshot_increment(ActorRef ref, const std::filesystem::path& file);

  // Restores a reactor saved with snapshot(), here or in another process, of this program or of
  // another build of it (pointers into the program are relocated, see reheap/program_refs.h),
  // under its old ActorRef, and starts it: on_restored runs before any message. Throws
  // SnapshotError for a bad file, std::runtime_error if the ActorRef is in use,
  // std::out_of_range for a worker that does not exist; a refused restore takes nothing.
  ActorRef restore(const std::filesystem::path& file, const ReactorRestoreOptions& options = {});

  // Writes the recording of a recorded reactor out, between two of its events, ordered like
  // snapshot() after what the calling thread sent it. Blocking. Ring
  // mode: its checkpoint (base-<events>.snap) and its log (log-<events + 1>.rlog) into
  // `directory`, which is returned. File mode: flushes the log and returns the directory the
  // recording is in (`directory` is not used). Throws std::runtime_error if the reactor is not
  // recorded, its recording stopped after an error, or (ring mode) `directory` holds the dump of
  // another recording, which it leaves as it was.
  std::filesystem::path dump_recording(ActorRef ref, const std::filesystem::path& directory);

  // Moves the reactor to another worker between two of its events, and pins it there (the
  // placement policy no longer moves it); its mailbox, timers, sockets (listeners and
  // connections, with the same ids, bytes queued for sending, paused or half-closed state and
  // owed on_drained) and reference come along; no byte is lost or reordered. Blocking: returns
  // once the move is requested; the reactor moves at its next turn, or, while one of its sockets
  // is still connecting or closing, at its first turn after that. A worker that does not exist
  // (kAnyWorker included) throws std::out_of_range.
  void move(ActorRef ref, int worker);

  // Checkpoints the whole process with an engine (CRIU by default), coordinated with the
  // reactors: see process_checkpoint.h. Blocking; call it from outside the workers (else
  // std::logic_error). Returns kDumped here and kRestored in a process restored from the dump.
  // Throws CheckpointError if the engine cannot run (its one-sentence reason), the TCP policy
  // cannot be met, the barrier times out, or the dump fails; the runtime then goes on.
  CheckpointResult checkpoint_process(const std::filesystem::path& directory, const CheckpointOptions& options = {});

  // The reactor's statistics, read on its worker between two events. Blocking. Throws
  // std::runtime_error if no such reactor lives.
  ReactorStats stats(ActorRef ref);
  RuntimeStats stats() const noexcept;

  void shutdown();

  // The runtime whose worker is the calling thread, or null.
  static Runtime* current() noexcept;

  // The identity whose origin this runtime's references carry (see actor_ref.h).
  NodeIdentity identity() const noexcept;

 private:
  friend class detail::LiveHost;
  // Creates a heap, runs `construct(arguments)` with it current (R's constructor), and starts the
  // reactor; see spawn.
  ActorRef spawn_constructed(const SpawnOptions& options, detail::ConstructReactor construct, void* arguments);
  // The constructor threw: the heap goes, unless the exception may still point into it.
  void abandon_spawn(HeapPtr heap, std::exception_ptr error) noexcept;
  ActorRef finish_spawn(HeapPtr heap, const SpawnOptions& options, Reactor* reactor);
  // ask without its types: takes `request` (null: encoding failed with `encoded`) whatever happens.
  // The first message of type `reply_type` to reach the asker is decoded by `decode` into
  // `reply` (a std::optional<Reply> of the caller's frame) on the asker's worker, only while the
  // caller still waits: the slot that coordinates both is the runtime's (runtime/src/messaging/ask_slot.h).
  using DecodeReply = void (*)(const Message& message, void* reply);
  template <class Reply>
  static void decode_reply(const Message& message, void* reply) {
    static_cast<std::optional<Reply>*>(reply)->emplace(message.get<Reply>());
  }
  bool ask_erased(ActorRef to, detail::Envelope* request, SendResult encoded, std::uint64_t reply_type,
                  DecodeReply decode, void* reply, std::chrono::nanoseconds timeout, SendResult* sent);

  std::unique_ptr<detail::RuntimeImpl> impl_;
};

}  // namespace reheap
