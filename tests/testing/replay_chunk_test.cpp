// A recorded reactor that takes new zone chunks during its recording - its first page run, a huge
// block, a size class past the 2 MiB it has in one class chunk - gets the same chunks in its
// replay, whatever the replaying process's zone holds: the log says which runs were taken at
// which event (RECORDING_FORMAT.md, "chunk"), and the replay takes exactly those (reheap/
// chunk_placement.h). A log naming chunks the replay may not take is refused, and no other heap is
// touched.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "reheap/chunk_placement.h"
#include "reheap/heap.h"
#include "reheap/heap_digest.h"
#include "reheap/heap_scope.h"
#include "reheap/recording_log.h"
#include "reheap/testing/replay.h"
#include "reheap/testing/test_runtime.h"
#include "reheap/zone.h"
#include "replay_support.h"

namespace replay_test::chunks {
namespace {

using reheap::testing::Replay;
using reheap::testing::ReplayOptions;

enum Take : std::uint32_t { kPageRun, kHuge, kClassChunk, kFreeHuge, kHugeAgain, kNothing, kPageRunThenThrow };
struct Grow {
  std::uint32_t take;
};
struct Placed {
  std::uint64_t address;  // where the event's block went: compared byte for byte by the replay
};

constexpr std::size_t kPageRunBytes = 64 * 1024;      // > 16 KiB: a page run
constexpr std::size_t kHugeBytes = 3 * 1024 * 1024;   // > 1 MiB: a run of chunks of its own
constexpr std::size_t kClassBlock = 4096;             // 512 of them fill a class chunk's 2 MiB
constexpr std::size_t kClassBlocks = 600;

// Each Grow takes what it names, writes it, keeps it, and tells the sink where it went: so the
// replay compares the addresses as outputs, and the heap digest after every event.
class Grower : public Reactor {
 public:
  explicit Grower(ActorRef sink) : sink_(sink) { handle<&Grower::on_grow>(); }
  const std::vector<char*>& kept() const { return kept_; }

 private:
  void on_grow(const Grow& g) {
    char* block = nullptr;
    switch (g.take) {
      case kPageRun:
        block = fill(new char[kPageRunBytes], kPageRunBytes);
        break;
      case kHuge:
      case kHugeAgain:
        block = fill(new char[kHugeBytes], kHugeBytes);
        huge_ = block;
        break;
      case kClassChunk:
        for (std::size_t i = 0; i < kClassBlocks; ++i) block = fill(new char[kClassBlock], kClassBlock);
        break;
      case kFreeHuge:
        delete[] huge_;
        huge_ = nullptr;
        break;
      case kPageRunThenThrow:
        block = fill(new char[kPageRunBytes], kPageRunBytes);
        send(sink_, Placed{reinterpret_cast<std::uint64_t>(block)});
        throw std::runtime_error("failed after a page run");
      default:
        block = fill(new char[64], 64);
        break;
    }
    send(sink_, Placed{reinterpret_cast<std::uint64_t>(block)});
  }
  char* fill(char* block, std::size_t bytes) {
    std::memset(block, static_cast<int>(++fills_), bytes);
    kept_.push_back(block);
    return block;
  }

  ActorRef sink_;
  std::vector<char*> kept_;
  char* huge_ = nullptr;
  std::uint32_t fills_ = 0;
};

// A heap of the process that is not the recorded reactor's, holding chunks of both halves.
struct Bystander {
  reheap::HeapPtr heap = reheap::Heap::create();
  char* run = nullptr;
  char* huge = nullptr;
  Bystander() {
    reheap::HeapScope scope(*heap);
    run = new char[kPageRunBytes];
    huge = new char[kHugeBytes];
    std::memset(run, 0x5a, kPageRunBytes);
    std::memset(huge, 0xa5, kHugeBytes);
  }
  std::uint64_t digest() const { return reheap::used_pages_digest(*heap); }
};

std::uint64_t chunk_index(const void* p) {
  const reheap::ZoneStats zone = reheap::Zone::stats();
  return (reinterpret_cast<std::uintptr_t>(p) - zone.base) / zone.chunk_size;
}

const std::vector<std::uint32_t> kTakes = {kNothing, kPageRun, kHuge,   kNothing,  kClassChunk,
                                           kPageRun, kFreeHuge, kHugeAgain, kNothing};

struct GrowerRun {
  ActorRef grower;
  std::filesystem::path recording;
  std::vector<std::filesystem::path> snapshots;  // after each Grow, when asked
};

// Records a Grower (file mode, a state digest after every event) while bystanders in its
// runtime and outside it take chunks too, so that the zone's first fit in the recording process
// is not what it is in a replay; then shuts the runtime down.
GrowerRun record_grower(const std::filesystem::path& directory, const std::filesystem::path& snapshot_dir = {}) {
  GrowerRun run;
  Bystander outside;
  reheap::RuntimeConfig config;
  config.workers = 1;
  reheap::Runtime rt(config);
  const ActorRef sink = rt.spawn<Idle>();
  reheap::SpawnOptions options;
  options.recording = file_recording(directory);
  run.grower = rt.spawn<Grower>(options, sink);
  const ActorRef other = rt.spawn<Grower>(sink);
  for (std::size_t i = 0; i < kTakes.size(); ++i) {
    EXPECT_EQ(rt.send(other, Grow{kTakes[(i + 1) % kTakes.size()]}), reheap::SendResult::kOk);
    EXPECT_EQ(rt.send(run.grower, Grow{kTakes[i]}), reheap::SendResult::kOk);
    EXPECT_TRUE(rt.wait_idle());
    if (!snapshot_dir.empty()) {
      run.snapshots.push_back(snapshot_dir / ("grower-" + std::to_string(i) + ".snap"));
      rt.snapshot(run.grower, run.snapshots.back());
    }
  }
  run.recording = recording_of(directory, run.grower);
  return run;
}

// Bystanders live through the recording or come after Replay::open: one created between the two
// could take the anchor's own chunks (a heap cache hands a destroyed heap's first chunk to the
// next heap), and then the anchor cannot be restored at all (restore says so).
TEST(ReplayChunks, ChunksTakenDuringTheRecordingAreTakenAgainAtTheirRecordedAddresses) {
  TempDir dir;
  Bystander before;  // holds chunks through the recording and the replay
  const std::uint64_t before_digest = before.digest();
  const GrowerRun run = record_grower(dir.path());
  Replay replay = Replay::open(run.recording);
  ASSERT_TRUE(replay.compares_state()) << (replay.warnings().empty() ? "" : replay.warnings().front());
  Bystander during;
  const std::uint64_t during_digest = during.digest();
  // on_start, the Grows, on_stop: every send's address and every heap digest equal the recording's.
  EXPECT_EQ(replay.run(), replay.recorded_events());
  EXPECT_EQ(replay.recorded_events(), kTakes.size() + 2);
  EXPECT_EQ(before.digest(), before_digest);
  EXPECT_EQ(during.digest(), during_digest);
}

TEST(ReplayChunks, ASecondReplayAndASeekInOneProcessTakeTheRecordedChunksAgain) {
  TempDir dir;
  TempDir snapshots;
  const GrowerRun run = record_grower(dir.path(), snapshots.path());
  {
    // A replay before this one: its heap's chunks wait in the quarantine when it ends.
    Replay first = Replay::open(run.recording);
    EXPECT_EQ(first.run(), first.recorded_events());
  }
  ReplayOptions options;
  options.snapshots = {run.snapshots[1], run.snapshots[4]};  // after the first page run; the class chunk
  Replay replay = Replay::open(run.recording, options);
  Bystander during;  // takes chunks where first fit would have put the replayed heap's
  const std::uint64_t last = replay.recorded_events();
  for (const std::uint64_t target : {last, std::uint64_t{3}, std::uint64_t{6}, std::uint64_t{0}, last - 1, last}) {
    SCOPED_TRACE("seek(" + std::to_string(target) + ")");
    replay.seek(target);
    EXPECT_EQ(replay.position(), target);
  }
}


// A log file: the header, then the blocks the writer hands over.
class FileOfBlocks final : public reheap::LogSink {
 public:
  FileOfBlocks(const std::filesystem::path& file, const reheap::LogHeader& header)
      : out_(file, std::ios::binary) {
    const std::vector<unsigned char> bytes = reheap::encode_log_header(header);
    out_.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  void write_block(std::uint64_t, std::span<const unsigned char> block) override {
    out_.write(reinterpret_cast<const char*>(block.data()), static_cast<std::streamsize>(block.size()));
  }

 private:
  std::ofstream out_;
};

// Writes `recording`'s anchor and log into `forged`, each record through `edit` (false: drop it)
// and the header through `edit_header`: a log as a hostile or older writer would make it, with
// valid checksums.
void forge(const std::filesystem::path& recording, const std::filesystem::path& forged,
           const std::function<bool(reheap::LogRecord&)>& edit,
           const std::function<void(reheap::LogHeader&)>& edit_header = {}) {
  std::filesystem::create_directories(forged);
  for (const auto& entry : std::filesystem::directory_iterator(recording)) {
    if (entry.path().extension() == ".snap") std::filesystem::copy_file(entry.path(), forged / entry.path().filename());
  }
  reheap::LogReader reader(recording);
  reheap::LogHeader header = reader.header();
  if (edit_header) edit_header(header);
  FileOfBlocks sink(forged / ("log-" + std::to_string(header.events_before + 1) + ".rlog"), header);
  reheap::LogWriter writer(sink, header.events_before);
  reheap::LogRecord r;
  while (reader.next(r)) {
    if (edit(r)) writer.append(r);
  }
  writer.close_event();
  writer.flush();
}

using reheap::ChunkHalf;
using reheap::LogRecord;
using reheap::RecordKind;
using reheap::RecordingErrc;
using reheap::RecordingError;

// The event of the recording whose Grow took `take` (on_start is event 1).
std::uint64_t event_of(Take take) {
  for (std::size_t i = 0; i < kTakes.size(); ++i) {
    if (kTakes[i] == take) return i + 2;
  }
  return 0;
}

// The chunk index of `recording`'s nth record of a chunk of the large half (0: none).
std::uint64_t large_chunk_record(const std::filesystem::path& recording, std::size_t nth) {
  reheap::LogReader reader(recording);
  LogRecord r;
  while (reader.next(r)) {
    if (r.kind == RecordKind::kChunk && r.result == static_cast<std::uint8_t>(ChunkHalf::kLarge) && nth-- == 0) {
      return r.id;
    }
  }
  return 0;
}

// Forges `recording` into `forged` with its nth record of a chunk of the large half naming chunk
// `id` instead; false if the log has no such record.
bool name_large_chunk(const std::filesystem::path& recording, const std::filesystem::path& forged,
                      std::size_t nth, std::uint64_t id) {
  bool named = false;
  forge(recording, forged, [&](LogRecord& r) {
    if (r.kind == RecordKind::kChunk && r.result == static_cast<std::uint8_t>(ChunkHalf::kLarge) && !named &&
        nth-- == 0) {
      r.id = id;
      named = true;
    }
    return true;
  });
  return named;
}

// Replays `recording` to its end and returns the RecordingError that stops it.
RecordingError replay_until_refused(const std::filesystem::path& recording) {
  Replay replay = Replay::open(recording);
  try {
    replay.run();
  } catch (const RecordingError& e) {
    EXPECT_THROW(replay.step(), std::logic_error) << "a replay that could not take its chunks went on";
    return e;
  }
  ADD_FAILURE() << recording << " replayed to its end";
  return RecordingError(RecordingErrc::kIo, recording, 0, "no error");
}

TEST(ReplayChunks, TheLogSaysWhichChunksTheHeapTookAtWhichEvent) {
  TempDir dir;
  const GrowerRun run = record_grower(dir.path());
  reheap::LogReader reader(run.recording);
  EXPECT_EQ(reader.header().version, reheap::kRecordingFormatVersion);
  std::vector<std::pair<std::uint64_t, reheap::ChunkRun>> taken;
  LogRecord r;
  while (reader.next(r)) {
    if (r.kind == RecordKind::kChunk) {
      taken.push_back({reader.position(), reheap::ChunkRun{static_cast<ChunkHalf>(r.result), r.id, r.value[0]}});
    }
  }
  // The first page run takes a large chunk; each huge block a run of its own (3 MiB and a header
  // page: one chunk); 600 blocks of 4 KiB take a second class chunk. The second page run fits in
  // the first one's chunk, and the second huge block takes the run the first one left, which the
  // heap kept - but in checked builds, which keep no freed huge run (zone.h, "Retention").
#if REHEAP_TEST_CHECKS
  ASSERT_EQ(taken.size(), 4u);
  EXPECT_EQ(taken[3].first, event_of(kHugeAgain));
  EXPECT_EQ(taken[3].second.half, ChunkHalf::kLarge);
#else
  ASSERT_EQ(taken.size(), 3u);
#endif
  EXPECT_EQ(taken[0].first, event_of(kPageRun));
  EXPECT_EQ(taken[0].second.half, ChunkHalf::kLarge);
  EXPECT_EQ(taken[0].second.count, 1u);
  EXPECT_EQ(taken[1].first, event_of(kHuge));
  EXPECT_EQ(taken[1].second.half, ChunkHalf::kLarge);
  EXPECT_EQ(taken[2].first, event_of(kClassChunk));
  EXPECT_EQ(taken[2].second.half, ChunkHalf::kClass);
  EXPECT_EQ(taken[2].second.count, 1u);
}

TEST(ReplayChunks, ARecordedChunkThatAnotherHeapHoldsStopsTheReplayAndThatHeapIsLeftAlone) {
  TempDir dir;
  TempDir forged;
  Bystander bystander;  // before the recording: its chunks are none of the recorded heap's
  const GrowerRun run = record_grower(dir.path());
  const std::uint64_t before = bystander.digest();
  const std::uint64_t target = chunk_index(bystander.run);
  // The first page run's chunk: the bystander's instead.
  ASSERT_TRUE(name_large_chunk(run.recording, forged.path(), 0, target));
  const RecordingError e = replay_until_refused(forged.path());
  EXPECT_EQ(e.code(), RecordingErrc::kChunkInUse);
  EXPECT_EQ(e.event(), event_of(kPageRun));
  const std::string what = e.what();
  EXPECT_NE(what.find("event " + std::to_string(event_of(kPageRun))), std::string::npos) << what;
  EXPECT_NE(what.find("from chunk " + std::to_string(target)), std::string::npos) << what;
  EXPECT_NE(what.find("heap " + std::to_string(bystander.heap->id()) + " of this process holds it"),
            std::string::npos)
      << what;
  EXPECT_EQ(bystander.digest(), before);
  EXPECT_EQ(bystander.run[kPageRunBytes - 1], 0x5a);
  EXPECT_EQ(reheap::Heap::owner_of(bystander.run), bystander.heap.get());
}

TEST(ReplayChunks, ARecordedChunkTheReplayedHeapHoldsItselfStopsTheReplay) {
  TempDir dir;
  TempDir forged;
  const GrowerRun run = record_grower(dir.path());
  // The huge block's run: the page run's chunk, which the heap holds.
  const std::uint64_t page_run_chunk = large_chunk_record(run.recording, 0);
  ASSERT_NE(page_run_chunk, 0u);
  ASSERT_TRUE(name_large_chunk(run.recording, forged.path(), 1, page_run_chunk));
  const RecordingError e = replay_until_refused(forged.path());
  EXPECT_EQ(e.code(), RecordingErrc::kChunkInUse);
  EXPECT_EQ(e.event(), event_of(kHuge));
  EXPECT_NE(std::string(e.what()).find("the replayed heap itself"), std::string::npos) << e.what();
}

TEST(ReplayChunks, ARecordedChunkOutsideItsHalfOfTheZoneIsACorruptLog) {
  TempDir dir;
  const GrowerRun run = record_grower(dir.path());
  const reheap::ZoneStats zone = reheap::Zone::stats();
  const std::uint64_t chunks = zone.size / zone.chunk_size;
  // A large chunk named in the class half, at the zone's end, far past it.
  for (const std::uint64_t first : {std::uint64_t{0}, chunks, std::uint64_t{1} << 62}) {
    SCOPED_TRACE("chunk " + std::to_string(first));
    TempDir forged;
    ASSERT_TRUE(name_large_chunk(run.recording, forged.path(), 0, first));
    const RecordingError e = replay_until_refused(forged.path());
    EXPECT_EQ(e.code(), RecordingErrc::kCorrupt);
    EXPECT_EQ(e.event(), event_of(kPageRun));
    EXPECT_NE(std::string(e.what()).find("does not hold"), std::string::npos) << e.what();
  }
}

TEST(ReplayChunks, AVersion1LogWithoutChunkRecordsReplaysAsBeforeAndSaysSo) {
  TempDir dir;
  TempDir old;
  const GrowerRun run = record_grower(dir.path());
  forge(
      run.recording, old.path(),
      // A version 1 log's state hashes are of another digest: they go too.
      [](LogRecord& r) { return r.kind != RecordKind::kChunk && r.kind != RecordKind::kStateHash; },
      [](reheap::LogHeader& h) { h.version = 1; });
  Replay replay = Replay::open(old.path());
  bool said = false;
  for (const std::string& w : replay.warnings()) said = said || w.find("format version 1") != std::string::npos;
  EXPECT_TRUE(said);
  // The page run's chunk is placed by this process's zone: the recorded one waits in the
  // quarantine, so the block lands elsewhere and the address the reactor sends differs.
  replay.run_to(event_of(kPageRun) - 1);
  try {
    replay.step();
    FAIL() << "the page run landed on its recorded address by chance";
  } catch (const reheap::testing::Divergence& d) {
    EXPECT_EQ(d.event(), event_of(kPageRun));
  }
}

TEST(ReplayChunks, ACrashBundleWhoseFailingEventTookAChunkReplaysItAtTheRecordedAddress) {
  TempDir dir;
  std::filesystem::path bundle;
  {
    Bystander outside;
    reheap::RuntimeConfig config;
    config.workers = 1;
    reheap::Runtime rt(config);
    const ActorRef sink = rt.spawn<Idle>();
    reheap::SpawnOptions options;
    options.recording = file_recording(dir.path());
    const ActorRef grower = rt.spawn<Grower>(options, sink);
    for (const Take take : {kHuge, kPageRunThenThrow}) EXPECT_EQ(rt.send(grower, Grow{take}), reheap::SendResult::kOk);
    EXPECT_TRUE(rt.wait_idle());
    bundle = recording_of(dir.path(), grower) / "crash-3";  // on_start, the huge block, the failure
  }
  ASSERT_TRUE(std::filesystem::exists(bundle / "manifest.json"));
  // Outputs of a failed event are not compared: the address it sent is read from the log.
  std::uint64_t recorded = 0;
  reheap::LogReader reader(bundle);
  LogRecord r;
  while (reader.next(r)) {
    if (r.kind == RecordKind::kSend && reader.position() == 3 && r.bytes.size() == sizeof recorded) {
      std::memcpy(&recorded, r.bytes.data(), sizeof recorded);
    }
  }
  ASSERT_NE(recorded, 0u);
  Replay replay = Replay::open(bundle);
  Bystander during;
  EXPECT_THROW(replay.run(), reheap::testing::ReplayedFailure);
  EXPECT_EQ(replay.position(), 3u);
  EXPECT_EQ(reinterpret_cast<std::uint64_t>(replay.reactor<Grower>().kept().back()), recorded);
}

TEST(ReplayChunks, AfterTheLogTheZonePlacesTheReactorsChunks) {
  TempDir dir;
  const GrowerRun run = record_grower(dir.path());
  reheap::testing::TestRuntime rt;
  ActorRef grower;
  {
    Replay replay = Replay::open(run.recording);
    replay.run_to(replay.recorded_events() - 1);  // all but on_stop
    EXPECT_NE(reheap::chunk_placement(replay.heap()), nullptr);
    grower = replay.continue_in(rt);
    EXPECT_TRUE(replay.warnings().empty()) << replay.warnings().front();
  }  // the replay, and what it placed chunks with, are gone
  for (const Take take : {kHuge, kPageRun, kClassChunk}) {
    rt.send(grower, Grow{take});  // chunks no record speaks of
    rt.run();
  }
  EXPECT_TRUE(rt.alive(grower));
  EXPECT_EQ(rt.failures().size(), 0u);
}

}  // namespace
}  // namespace replay_test::chunks
