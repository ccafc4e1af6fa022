// The runtime's recorder of one reactor (see recorder.h, reheap/recording.h).
//
// Life of a recording: the first event the funnel hands us anchors it - the heap is between two
// events then, with n events behind it (the heap's own event counter), and the anchor is a full
// snapshot of it (file mode: base-<n>.snap; ring mode: a checkpoint in memory) with the
// recording's id written into the heap first, so that the anchor names its recording. The log
// that follows starts after event n. A restart under kRestart brings back an older heap: its
// event counter no longer matches the log's, and the next event anchors anew (file mode: in a
// subdirectory restart-<k>/, so that each directory holds one consistent anchor and log).
//
// Blocks reach the sink at event boundaries (when full, before a snapshot, at a failure, on
// dump) and, during a long event, whenever the block is full (recording_host.h), so every block
// starts with the input record of an event or continues one; a file segment only ever starts
// with the former (log_sinks.h).
//
// Errors: whatever fails while recording (a full disk, an anchor that cannot be written) stops
// the recording of this reactor, counts it, and says why on stderr. The reactor runs on
// unrecorded: a recording is a diagnosis aid and must never take down what it observes.
#include "recording/make_recorder.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <optional>
#include <random>
#include <typeinfo>

#include "checkpoint/reactor_snapshot.h"
#include "reactor/live_host.h"
#include "reactor/reactor_access.h"
#include "reactor/type_name.h"
#include "recording/crash_bundle.h"
#include "recording/fatal_bundle.h"
#include "recording/fatal_flush.h"
#include "recording/fatal_signal.h"
#include "recording/log_sinks.h"
#include "recording/recording_host.h"
#include "reheap/byte_stream.h"
#include "reheap/chunk_placement.h"
#include "reheap/heap_digest.h"
#include "reheap/heap_scope.h"
#include "reheap/recording_log.h"
#include "reheap/snapshot.h"
#include "scheduling/worker.h"

namespace reheap::detail::recording {
namespace {

std::uint64_t new_recording_id() {
  std::random_device device;
  std::uint64_t id = 0;
  while (id == 0) id = (static_cast<std::uint64_t>(device()) << 32) | device();
  return id;
}

std::string log_name(std::uint64_t events_before) { return "log-" + std::to_string(events_before + 1) + ".rlog"; }
std::string anchor_name(std::uint64_t events) { return "base-" + std::to_string(events) + ".snap"; }

ErrorCategory category_of(const std::error_code& error) noexcept {
  if (!error) return ErrorCategory::kNone;
  return error.category() == std::generic_category() ? ErrorCategory::kGeneric : ErrorCategory::kSystem;
}

// A hard link when `to` can be one (same file system), else a copy.
void link_or_copy(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::error_code ignored;
  std::filesystem::remove(to, ignored);
  std::error_code link_error;
  std::filesystem::create_hard_link(from, to, link_error);
  if (link_error) std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
}

class ReactorRecorder final : public Recorder,
                              private LogSink,
                              private ChunkPlacement,
                              private FatalSignalWitness,
                              private FatalFlushable {
 public:
  ReactorRecorder(const RecordingOptions& options, std::atomic<std::uint64_t>& errors)
      : options_(options),
        errors_(errors),
        slot_(take_fatal_flush_slot(this)),
        writer_(*this, 0),
        host_(writer_, *slot_, options.outputs) {}
  // The reactor is gone (teardown): what the last block holds still goes to the sink.
  ~ReactorRecorder() override {
    if (placed_heap_ != 0) detach_chunk_placement(placed_heap_, this);
    if (!stopped_ && anchored_) {
      HeapScope system(nullptr);
      try {
        const FatalFlushSlot::Locked locked(*slot_);
        writer_.flush();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "reheap: the end of the recording of reactor %llu is lost: %s\n",
                     static_cast<unsigned long long>(actor_.value()), e.what());
      }
    }
    give_back_fatal_flush_slot(slot_);
  }
  ReactorRecorder(const ReactorRecorder&) = delete;
  ReactorRecorder& operator=(const ReactorRecorder&) = delete;

  ReactorHost* begin_event(const Event& event, LiveHost& live) override;
  // Any other event, or a message whose record needs an anchor first or a bigger block buffer.
  [[gnu::noinline]] ReactorHost* begin_event_slow(const Event& event, LiveHost& live);
  // The event's record is written: its hook's operations go to the recording host.
  ReactorHost* entered(LiveHost& live, EventKind kind) noexcept;
  void end_event(Cell* c) override;
  void before_snapshot(Cell* c) override;
  void begin_outside_state(Cell* c) override;
  void end_outside_state(Cell* c) override;
  void flush_pending(Cell* c) override;
  std::filesystem::path dump(Cell* c, const std::filesystem::path& directory) override;
  std::optional<RestartSource> take_restart_source(Cell* c, std::string* why) override;

 private:
  // LogSink: a finished block goes to the current segment or the ring.
  void write_block(std::uint64_t events_before, std::span<const unsigned char> block) override;

  // ChunkPlacement: the heap took new zone chunks. The zone places them (first fit) as for any
  // heap; during an event the run is written down, so that a replay takes the same one
  // (RECORDING_FORMAT.md, "chunk"). Outside events the runtime's own bookkeeping allocates in
  // the heap (the saved timers of a snapshot): nothing of that is replayed.
  std::optional<std::uint64_t> place(ChunkHalf, std::uint64_t) noexcept override { return std::nullopt; }
  void taken(const ChunkRun& run) noexcept override;
  void refused(const ChunkRun&, const ChunkRefusal&) noexcept override {}

  // A new anchor after `events` events: the first, or one after a kRestart restart (file mode:
  // in a new directory restart-<k>/), or, with `rotate`, one that replaces the current anchor
  // and its log in the same directory (the file mode's bound, anchor_every_bytes).
  bool anchor(Cell* c, std::uint64_t events, bool rotate = false);
  void write_input(const Event& event);
  // Writes the block held now to the sink, between two events; a failing sink stops the recording.
  void flush_log(Cell* c);
  void write_crash_bundle(Cell* c);
  // The manifest's fields a failure does not tell.
  CrashManifest manifest_base() const;
  // FatalSignalWitness: in the signal handler, during one of this reactor's events.
  void on_fatal_signal(int signal, const siginfo_t& info) noexcept override;
  std::uint64_t fatal_event() const noexcept override { return writer_.events(); }
  const FatalFlushSlot* fatal_flush_slot() const noexcept override { return slot_; }
  // FatalFlushable: another reactor's fatal signal ends the process; this one is between two
  // events or in the middle of one on another thread (fatal_flush.h).
  bool flush_in_signal_handler() noexcept override;
  void write_ring(const std::filesystem::path& directory) const;
  LogHeader header_for(std::uint64_t events_before) const;
  [[gnu::cold, gnu::noinline]] void stop(Cell* c, const std::string& why);

  const RecordingOptions options_;
  std::atomic<std::uint64_t>& errors_;
  // Locked around every change of what flush_in_signal_handler reads: writer_'s block (a flush, a
  // restart, its buffer growing), file_, ring_, checkpoint_ and fatal_. Declared before writer_
  // and host_, which use it.
  FatalFlushSlot* slot_;
  LogWriter writer_;
  RecordingHost host_;
  LogRecord input_;  // reused for the records written here (inputs, failures, hashes)
  LogRecord chunk_;  // a chunk take's, which may come in the middle of another record's making
  std::uint64_t placed_heap_ = 0;  // the heap this recorder is attached to as its ChunkPlacement
  bool in_event_ = false;
  bool in_outside_state_ = false;  // the runtime writes into the heap between events (chunks logged)
  bool chunk_lost_ = false;  // a chunk record could not be written (no memory): the log is not whole
  bool anchored_ = false;
  bool stopped_ = false;
  bool anchor_due_ = false;  // file mode: the log since the anchor passed anchor_every_bytes
  // File mode: the worker that will call flush_pending within flush_interval (null: none asked).
  Worker* flush_queued_on_ = nullptr;
  std::uint64_t recording_id_ = 0;
  ActorRef actor_{};
  std::string reactor_type_;  // read while the heap is sound (a failed one is suspect)
  std::uint64_t anchor_events_ = 0;
  unsigned file_anchors_ = 0;
  std::filesystem::path directory_;    // file mode: of the current anchor and its segments
  std::filesystem::path anchor_file_;  // file mode
  std::unique_ptr<FileSegmentSink> file_;
  MemoryLogSink ring_;
  std::vector<unsigned char> checkpoint_;  // ring mode: the anchor
  FatalBundle fatal_;       // prepared at each anchor
  const char* hook_ = "";   // of the event under way
};

LogHeader ReactorRecorder::header_for(std::uint64_t events_before) const {
  LogHeader h;
  h.recording_id = recording_id_;
  h.actor = actor_;
  h.build_id = program_build_id();
  h.events_before = events_before;
  h.created_unix_ns = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                     std::chrono::system_clock::now().time_since_epoch())
                                                     .count());
  return h;
}

void ReactorRecorder::stop(Cell* c, const std::string& why) {
  {
    const FatalFlushSlot::Locked locked(*slot_);
    stopped_ = true;
    slot_->set_owner(nullptr);
    file_.reset();
  }
  c->stats.recording_errors++;
  errors_.fetch_add(1, std::memory_order_relaxed);
  std::fprintf(stderr, "reheap: the recording of reactor %llu stopped: %s\n",
               static_cast<unsigned long long>(c->ref().value()), why.c_str());
}

bool ReactorRecorder::anchor(Cell* c, std::uint64_t events, bool rotate) {
  try {
    // Everything here replaces what a fatal signal's handler would write (the log's sink, the
    // ring's anchor and log, the block): it skips this recorder while it happens.
    const FatalFlushSlot::Locked locked(*slot_);
    if (recording_id_ == 0) {
      recording_id_ = new_recording_id();
      actor_ = c->ref();
      reactor_type_ = type_name(typeid(*c->reactor));
    }
    ReactorAccess::recording_id(*c->reactor) = recording_id_;
    if (options_.mode == RecordingMode::kFile) {
      if (options_.directory.empty()) throw std::runtime_error("RecordingOptions::directory is empty");
      std::vector<std::filesystem::path> replaced;
      if (rotate) {
        replaced = file_->segments();
        replaced.push_back(anchor_file_);
      } else {
        directory_ = options_.directory / ("reactor-" + std::to_string(actor_.value()));
        if (file_anchors_ > 0) directory_ /= "restart-" + std::to_string(file_anchors_);
        std::filesystem::create_directories(directory_);
        ++file_anchors_;
      }
      file_.reset();
      anchor_file_ = directory_ / anchor_name(events);
      save_reactor_aside(c, anchor_file_);
      file_ = std::make_unique<FileSegmentSink>(directory_, header_for(events), options_.segment_bytes);
      file_->start(events);
      // Only once the new anchor and its first segment exist: until then the old pair is the
      // recording. A file that cannot go only costs disk; the new pair is complete without it.
      // The old anchor goes through remove_snapshot, so that the chunks it held for its restore
      // (with a state directory, reheap/snapshot.h) are free for new heaps at once.
      for (const std::filesystem::path& file : replaced) {
        if (file == anchor_file_ || file == file_->segments().front()) continue;
        std::error_code ignored;
        reheap::remove_snapshot(file, ignored);
      }
    } else {
      checkpoint_.clear();
      VectorSink sink(checkpoint_);
      write_reactor_aside(c, sink);
      ring_.reset(header_for(events), options_.ring_bytes + 2 * kLogBlockBytes);
    }
    std::filesystem::path bundles = directory_;  // file mode
    if (options_.mode == RecordingMode::kRing) {
      bundles = options_.directory.empty() ? std::filesystem::path()
                                           : options_.directory / ("reactor-" + std::to_string(actor_.value()));
    }
    CrashManifest m = manifest_base();
    m.anchor = anchor_name(events);
    m.anchor_events = events;
    fatal_.prepare(std::move(bundles), manifest_frame(m), m.anchor, log_name(events));
    writer_.restart(events);
    anchor_events_ = events;
    anchored_ = true;
  } catch (const std::exception& e) {
    stop(c, std::string("cannot anchor the recording: ") + e.what());
    return false;
  }
  // The heap is attached (again) at each anchor: a kRestart restart brings a restored heap, which
  // starts without a placement.
  set_chunk_placement(*c->heap, this);
  placed_heap_ = c->heap->id();
  anchor_due_ = false;
  return true;
}

void ReactorRecorder::write_input(const Event& event) {
  LogRecord& r = input_;
  if (event.kind == EventKind::kMessage) {
    // The commonest input: LogWriter::append reads only these fields of a message record, so
    // the record is not cleared field by field first.
    r.kind = RecordKind::kMessage;
    r.ref = event.message->sender();
    r.type_id = event.message->type_id();
    r.encoding = event.message->encoding();
    const Envelope& e = MessageAccess::envelope(*event.message);
    r.result = e.exchange;
    r.id = e.correlation;
    r.bytes.assign(static_cast<const char*>(event.message->data()), event.message->size());
    append_record(writer_, *slot_, r);
    return;
  }
  r.clear();
  r.kind = static_cast<RecordKind>(event.kind);
  switch (event.kind) {
    case EventKind::kMessage:
      r.ref = event.message->sender();
      r.type_id = event.message->type_id();
      r.encoding = event.message->encoding();
      r.bytes.assign(static_cast<const char*>(event.message->data()), event.message->size());
      break;
    case EventKind::kTimer:
      r.id = event.timer;
      break;
    case EventKind::kAccept:
      r.id = event.socket;
      r.connection = event.connection;
      break;
    case EventKind::kEnd:
    case EventKind::kDrained:
      r.id = event.socket;
      break;
    case EventKind::kConnect:
    case EventKind::kClosed:
    case EventKind::kAcceptError:
      r.id = event.socket;
      r.error_category = category_of(event.error);
      r.error_value = event.error.value();
      break;
    case EventKind::kData:
      r.id = event.socket;
      r.bytes.assign(event.data.data(), event.data.size());
      break;
    case EventKind::kStart:
    case EventKind::kRestored:
    case EventKind::kStop:
      break;
  }
  append_record(writer_, *slot_, r);
}

ReactorHost* ReactorRecorder::begin_event(const Event& event, LiveHost& live) {
  // The commonest event, a message to an anchored recording whose block has the room: encoded
  // straight from the envelope into the block, which allocates nothing and so needs no heap scope.
  if (event.kind == EventKind::kMessage && anchored_ && !stopped_ &&
      ReactorAccess::events(*live.cell()->reactor) == writer_.events()) [[likely]] {
    const Message& m = *event.message;
    const Envelope& e = MessageAccess::envelope(m);
    if (writer_.append_message(ActorRef(e.sender), m.type_id(), m.encoding(), e.exchange, e.correlation, m.data(),
                               m.size())) {
      [[likely]] return entered(live, EventKind::kMessage);
    }
  }
  return begin_event_slow(event, live);
}

ReactorHost* ReactorRecorder::begin_event_slow(const Event& event, LiveHost& live) {
  if (stopped_) return &live;
  HeapScope system(nullptr);
  Cell* c = live.cell();
  const std::uint64_t events = ReactorAccess::events(*c->reactor);
  if ((!anchored_ || events != writer_.events()) && !anchor(c, events)) return &live;
  write_input(event);
  return entered(live, event.kind);
}

ReactorHost* ReactorRecorder::entered(LiveHost& live, EventKind kind) noexcept {
  host_.bind(live);
  in_event_ = true;
  hook_ = hook_name(kind);
  set_fatal_signal_witness(this);
  return &host_;
}

void ReactorRecorder::on_fatal_signal(int signal, const siginfo_t& info) noexcept {
  if (stopped_ || !anchored_) return;
  FatalBundle::Recording r;
  r.writer = &writer_;
  r.hook = hook_;
  if (options_.mode == RecordingMode::kFile) {
    if (!file_) return;
    r.file = file_.get();
    r.anchor_file = &anchor_file_;
  } else {
    r.checkpoint = checkpoint_;
    r.ring = ring_.bytes();
  }
  fatal_.write(signal, info, r);
}

bool ReactorRecorder::flush_in_signal_handler() noexcept {
  // The slot is claimed: nothing read here changes any more. A recording that stopped has no
  // owner in its slot and is not asked.
  if (!anchored_) return false;
  const LogWriter::Committed committed = writer_.committed();
  if (options_.mode == RecordingMode::kFile) {
    if (committed.records == 0 || !file_) return false;
    return fatal_.append_block(*file_, committed);
  }
  return fatal_.write_ring_dump(checkpoint_, ring_.bytes(), committed);
}

void ReactorRecorder::taken(const ChunkRun& run) noexcept {
  if ((!in_event_ && !in_outside_state_) || stopped_) return;
  // Called inside an allocation in the reactor's heap: the log is process memory.
  HeapScope system(nullptr);
  chunk_.clear();
  chunk_.kind = RecordKind::kChunk;
  chunk_.result = static_cast<std::uint8_t>(run.half);
  chunk_.id = run.first;
  chunk_.value[0] = run.count;
  try {
    append_record(writer_, *slot_, chunk_);
  } catch (...) {
    chunk_lost_ = true;
  }
}

void ReactorRecorder::end_event(Cell* c) {
  in_event_ = false;
  set_fatal_signal_witness(nullptr);
  if (stopped_ || !anchored_) return;
  if (chunk_lost_) [[unlikely]] {
    stop(c, "a chunk the reactor's heap took could not be written down (out of memory)");
    return;
  }
  if (host_.failed()) [[unlikely]] {
    stop(c, host_.take_failure());
    return;
  }
  // The commonest end: nothing to append, no block to hand over, no checkpoint - and so nothing
  // to allocate, which spares the heap scope. The event's records are whole now (unless it failed:
  // its failure record comes first).
  if (!c->supervision.failed) writer_.close_event();
  // What a SIGKILL may lose is bounded in time: the records held now reach the file within
  // flush_interval, by the worker's timer, unless a full block or a pause writes them sooner.
  if (options_.mode == RecordingMode::kFile && options_.flush_interval.count() > 0) {
    Worker* w = Worker::current();
    if (flush_queued_on_ != w && w != nullptr && writer_.pending_bytes() != 0) {
      flush_queued_on_ = w;
      w->queue_recording_flush(c, options_.flush_interval);
    }
  }
  if (!c->supervision.failed && options_.state_hash_every == 0 && !anchor_due_ &&
      writer_.pending_bytes() < kLogBlockBytes &&
      (options_.mode != RecordingMode::kRing ||
       ring_.bytes().size() + writer_.pending_bytes() <= options_.ring_bytes)) {
    return;
  }
  HeapScope system(nullptr);
  try {
    if (c->supervision.failed) {
      input_.clear();
      input_.kind = RecordKind::kEventFailed;
      input_.text = c->supervision.hook;
      input_.detail = c->supervision.what;
      append_record(writer_, *slot_, input_);
      writer_.close_event();
      {
        const FatalFlushSlot::Locked locked(*slot_);
        writer_.flush();
      }
      write_crash_bundle(c);
      return;
    }
    if (options_.state_hash_every != 0 && writer_.events() % options_.state_hash_every == 0) {
      input_.clear();
      input_.kind = RecordKind::kStateHash;
      input_.digest = state_digest(*c->heap);
      append_record(writer_, *slot_, input_);
      writer_.close_event();
    }
    // The ring's bound: a checkpoint now makes the whole log so far unnecessary.
    if (options_.mode == RecordingMode::kRing && c->state == CellState::kLive &&
        ring_.bytes().size() + writer_.pending_bytes() > options_.ring_bytes) {
      anchor(c, writer_.events());
      return;
    }
    if (writer_.pending_bytes() >= kLogBlockBytes) {
      const FatalFlushSlot::Locked locked(*slot_);
      writer_.flush();
    }
    // The file mode's bound (write_block says when it is passed), between two events.
    if (anchor_due_ && c->state == CellState::kLive) anchor(c, writer_.events(), true);
  } catch (const std::exception& e) {
    stop(c, e.what());
  }
}

void ReactorRecorder::write_block(std::uint64_t events_before, std::span<const unsigned char> block) {
  if (options_.mode == RecordingMode::kFile) {
    file_->write_block(events_before, block);
    anchor_due_ = options_.anchor_every_bytes != 0 && file_->bytes_written() > options_.anchor_every_bytes;
  } else {
    ring_.write_block(events_before, block);
  }
}

void ReactorRecorder::flush_log(Cell* c) {
  if (stopped_ || !anchored_) return;
  HeapScope system(nullptr);
  try {
    const FatalFlushSlot::Locked locked(*slot_);
    writer_.flush();
  } catch (const std::exception& e) {
    stop(c, e.what());
  }
}

void ReactorRecorder::before_snapshot(Cell* c) { flush_log(c); }

void ReactorRecorder::begin_outside_state(Cell*) { in_outside_state_ = anchored_ && !stopped_; }

void ReactorRecorder::end_outside_state(Cell* c) {
  if (!in_outside_state_) return;
  in_outside_state_ = false;
  HeapScope system(nullptr);
  try {
    input_.clear();
    input_.kind = RecordKind::kOutsideState;
    const auto& timers = ReactorAccess::saved_timers(*c->reactor);
    input_.numbers.push_back(static_cast<std::int64_t>(timers.size()));
    for (const auto& t : timers) {
      input_.numbers.push_back(static_cast<std::int64_t>(t.id));
      input_.numbers.push_back(t.due_in_ns);
      input_.numbers.push_back(t.period_ns);
    }
    const auto& sockets = ReactorAccess::saved_sockets(*c->reactor);
    input_.numbers.push_back(static_cast<std::int64_t>(sockets.size()));
    for (const SocketId id : sockets) input_.numbers.push_back(static_cast<std::int64_t>(id));
    append_record(writer_, *slot_, input_);
    writer_.close_event();  // between events: it belongs with the event before
  } catch (const std::exception& e) {
    stop(c, e.what());
  }
}

void ReactorRecorder::flush_pending(Cell* c) {
  flush_queued_on_ = nullptr;
  // A ring lives in the process's memory: writing its block there saves nothing from a crash.
  if (options_.mode == RecordingMode::kFile && writer_.pending_bytes() != 0) flush_log(c);
}

void ReactorRecorder::write_ring(const std::filesystem::path& directory) const {
  std::filesystem::create_directories(directory);
  write_whole_file(directory / anchor_name(anchor_events_), checkpoint_);
  write_whole_file(directory / log_name(anchor_events_), ring_.bytes());
}

std::filesystem::path ReactorRecorder::dump(Cell* c, const std::filesystem::path& directory) {
  HeapScope system(nullptr);
  if (!stopped_ && !anchored_) anchor(c, ReactorAccess::events(*c->reactor));  // no event yet
  if (stopped_) throw std::runtime_error("the recording of this reactor stopped after an error");
  try {
    const FatalFlushSlot::Locked locked(*slot_);
    writer_.flush();
  } catch (const std::exception& e) {
    stop(c, e.what());
    throw;
  }
  if (options_.mode == RecordingMode::kFile) return directory_;
  // A dump never mixes recordings: its anchor and log would sit among another reactor's, and a
  // replay of the directory would read the wrong pair.
  std::error_code missing;
  for (const auto& entry : std::filesystem::directory_iterator(directory, missing)) {
    if (entry.path().extension() != ".rlog") continue;
    std::uint64_t other = 0;
    try {
      other = LogReader(entry.path()).header().recording_id;
    } catch (const std::exception& e) {
      throw std::runtime_error(directory.string() + " holds " + entry.path().filename().string() +
                               ", which is not a readable log (" + e.what() +
                               "): dump into an empty directory");
    }
    if (other != recording_id_) {
      throw std::runtime_error(directory.string() + " holds the dump of another recording (" +
                               entry.path().filename().string() + "): dump into an empty directory");
    }
  }
  write_ring(directory);
  return directory;
}

std::optional<RestartSource> ReactorRecorder::take_restart_source(Cell*, std::string* why) {
  HeapScope system(nullptr);
  if (stopped_) {
    *why = "its recording stopped after an error";
    return std::nullopt;
  }
  if (!anchored_) {
    *why = "its recording had no anchor yet";
    return std::nullopt;
  }
  RestartSource s;
  s.recording_id = recording_id_;
  s.anchor_events = anchor_events_;
  s.failing_event = writer_.events();
  s.cancelled_timers = std::move(host_.cancelled_timers());
  host_.cancelled_timers().clear();
  // The log holds the failing event (end_event handed its block over). From the next event on, the
  // restored reactor is recorded anew, from an anchor of its own.
  const FatalFlushSlot::Locked locked(*slot_);
  anchored_ = false;
  if (options_.mode == RecordingMode::kFile) {
    s.anchor_file = anchor_file_;
    s.log_directory = directory_;
    file_.reset();
  } else {
    s.anchor_bytes = std::move(checkpoint_);
    checkpoint_.clear();
    s.log_bytes = ring_.take_bytes();
  }
  return s;
}

void ReactorRecorder::write_crash_bundle(Cell* c) {
  std::filesystem::path root = directory_;
  if (options_.mode == RecordingMode::kRing) {
    if (options_.directory.empty()) return;  // nowhere to put it
    root = options_.directory / ("reactor-" + std::to_string(actor_.value()));
  }
  const std::uint64_t event = writer_.events();
  // A bundle of its own: a restarted reactor (ring mode) may fail again at the same event, and its
  // bundle must not mix with the first one's (the signal handler names them the same way).
  std::filesystem::create_directories(root);
  std::filesystem::path bundle = root / ("crash-" + std::to_string(event));
  for (unsigned n = 2; !std::filesystem::create_directory(bundle); ++n) {
    if (n > 100) throw std::runtime_error("too many crash bundles for event " + std::to_string(event) + " in " + root.string());
    bundle = root / ("crash-" + std::to_string(event) + "." + std::to_string(n));
  }
  if (options_.mode == RecordingMode::kFile) {
    // The anchor is a full snapshot (never an increment), so the bundle needs this one file. No
    // more is written to these files (a restart anchors anew elsewhere): links are as good as
    // copies, and cost nothing however long the log.
    for (const std::filesystem::path& file : file_->segments()) link_or_copy(file, bundle / file.filename());
    link_or_copy(anchor_file_, bundle / anchor_file_.filename());
  } else {
    write_ring(bundle);
  }
  CrashManifest m = manifest_base();
  m.hook = c->supervision.hook;
  m.failure = c->supervision.what;
  m.failing_event = event;
  m.anchor = anchor_name(anchor_events_);
  m.anchor_events = anchor_events_;
  write_manifest(bundle / "manifest.json", m);
}

CrashManifest ReactorRecorder::manifest_base() const {
  CrashManifest m;
  m.build_id = program_build_id();
  std::error_code no_path;  // then "": reheap-snap replay asks for --program
  m.program = std::filesystem::read_symlink("/proc/self/exe", no_path).string();
  m.reactor = actor_;
  m.reactor_type = reactor_type_;
  m.recording_id = recording_id_;
  return m;
}

}  // namespace

void require_recordable(const RecordingOptions& options, const char* operation) {
  HeapScope system(nullptr);
  if (options.mode != RecordingMode::kFile && options.mode != RecordingMode::kRing) return;
  const std::string what = std::string("reheap::Runtime::") + operation + ": " +
                           (options.mode == RecordingMode::kFile ? "a kFile recording" : "a kRing recording");
  if (options.directory.empty()) {
    if (options.mode == RecordingMode::kRing) return;  // no crash bundles: nothing to write
    throw std::invalid_argument(what + " needs RecordingOptions::directory");
  }
  // Fails, too, for a path that exists and is not a directory.
  std::error_code error;
  std::filesystem::create_directories(options.directory, error);
  if (error) {
    throw std::invalid_argument(what + " cannot create its directory " + options.directory.string() + ": " +
                                error.message());
  }
  if (::access(options.directory.c_str(), W_OK | X_OK) != 0) {
    throw std::invalid_argument(what + " cannot write in its directory " + options.directory.string() + ": " +
                                std::strerror(errno));
  }
}

std::unique_ptr<Recorder> make_recorder(const RecordingOptions& options, std::atomic<std::uint64_t>& errors) {
  install_fatal_signal_handlers();
  return std::make_unique<ReactorRecorder>(options, errors);
}

}  // namespace reheap::detail::recording
