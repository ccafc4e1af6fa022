// replay_bench: how fast a recording replays against the run that recorded it, and how long a
// seek takes on a large heap (README.md in this directory, "Replay benchmark").
//
// Part 1, replay speed. A Counter reactor on worker 0 of a 2-worker reheap::Runtime is recorded
// (RecordingMode::kFile, outputs as digests); a Feeder on worker 1 sends it `--events` Items from
// its on_start, in one go. Each Item updates a std::map<uint32_t, uint64_t> of 16,384 keys in the
// Counter's heap, and every 64th is answered with a Progress message (an output the replay
// compares). The original rate is the Items delivered over the wall time from the first Item to the
// last, read with steady_clock in the hook into globals outside the heap (the reactor's state and
// outputs do not depend on them, so the replay is unaffected). Then, in this process, after the
// runtime is gone, Replay::open + run() replays the whole log (on_start, the Items, on_stop) and
// the replay rate is its events over run()'s wall time; once with output checks on (the default)
// and once with them off (ReplayOptions::check_outputs = false). For scale, each repetition also
// runs the same reactors unrecorded first (the "original" is the recorded run, which the replay
// reproduces; recording itself slows the sender and receiver, see "Recording overhead"). All of it for
// RecordingOptions::state_hash_every 0 and 1000 by default (--state-hash-every LIST; with k > 0 the
// recording writes the heap's digest every k events and the replay compares it).
//
// Part 2, seek. A Store reactor gets `--heap-mib` Fill messages, each adding a 1 MiB block of
// pseudo-random words to a std::vector of blocks, then `--touches` Touch messages, each changing
// one word of one block and a std::map entry. The messages are sent from outside in 11 equal
// slices; after each of the first 10, Runtime::snapshot saves the Store (a full snapshot, ~the
// heap's size). Replay::open with ReplayOptions::snapshots = those 10 files, then seek() to
// targets visited so that each restores a snapshot (last event, just after and just before
// snapshots, and one before the first snapshot, which starts from the anchor at event 0 and
// replays the fill), reporting last_seek_duration() and last_seek_restored(). Then the state
// oracle's price on that heap: reheap::state_digest (what recordings take, format version 5) and
// reheap::used_pages_digest (the raw bytes, before it) of the replayed 1 GiB heap, timed.
//
// Files go into a fresh directory under --dir (default: the temp directory), removed at exit.
// Part 2 needs about 11 x the heap on disk; it is skipped, with a message, if --dir lacks it.
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "reheap/heap_digest.h"
#include "reheap/reactor.h"
#include "reheap/recording.h"
#include "reheap/runtime.h"
#include "reheap/testing/replay.h"

namespace {

using Clock = std::chrono::steady_clock;
using reheap::ActorRef;
using reheap::Reactor;
using reheap::testing::Replay;
using reheap::testing::ReplayOptions;

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---- part 1: replay speed ---------------------------------------------------------------------

struct Item {
  std::uint32_t seq;
  std::uint32_t key;
};
struct Progress {
  std::uint64_t items;
  std::uint64_t value;
};

constexpr std::uint32_t kKeys = 16384;

// Set by the recording run only: the Counter's first and last Item, in steady_clock ns. Outside
// every heap, and nothing the reactor keeps or sends depends on them.
std::atomic<bool> g_timing{false};
std::atomic<std::int64_t> g_first_ns{0};
std::atomic<std::int64_t> g_last_ns{0};

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

class Counter : public Reactor {
 public:
  explicit Counter(std::uint64_t expected) : expected_(expected) { handle<&Counter::on_item>(); }
  void on_item(const Item& item) {
    std::uint64_t& v = counts_[item.key];
    v = v * 31 + item.seq + 1;
    ++items_;
    if (g_timing.load(std::memory_order_relaxed)) {
      if (items_ == 1) g_first_ns.store(steady_ns(), std::memory_order_relaxed);
      if (items_ == expected_) g_last_ns.store(steady_ns(), std::memory_order_relaxed);
    }
    if (items_ % 64 == 0) send(sender(), Progress{items_, v});
  }
  std::uint64_t items() const { return items_; }
  std::size_t keys() const { return counts_.size(); }

 private:
  std::map<std::uint32_t, std::uint64_t> counts_;
  std::uint64_t expected_;
  std::uint64_t items_ = 0;
};

class Feeder : public Reactor {
 public:
  Feeder(ActorRef to, std::uint64_t count) : to_(to), count_(count) { handle<&Feeder::on_progress>(); }
  void on_start() override {
    for (std::uint64_t i = 0; i < count_; ++i) {
      const auto seq = static_cast<std::uint32_t>(i);
      send(to_, Item{seq, static_cast<std::uint32_t>(mix(i) % kKeys)});
    }
  }
  void on_progress(const Progress&) { ++progress_; }

 private:
  ActorRef to_;
  std::uint64_t count_;
  std::uint64_t progress_ = 0;
};

// A fresh mkdtemp directory, removed (with everything in it) when it goes.
class ScratchDir {
 public:
  explicit ScratchDir(const std::filesystem::path& parent) {
    std::string pattern = (parent / "replay_bench.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

reheap::RecordingOptions file_recording(const std::filesystem::path& directory, std::uint32_t hash_every) {
  reheap::RecordingOptions r;
  r.mode = reheap::RecordingMode::kFile;
  r.directory = directory;
  r.outputs = reheap::RecordedOutputs::kDigests;
  r.state_hash_every = hash_every;
  return r;
}

std::filesystem::path recording_of(const std::filesystem::path& directory, ActorRef ref) {
  return directory / ("reactor-" + std::to_string(ref.value()));
}

std::uint64_t bytes_with_extension(const std::filesystem::path& directory, const std::string& extension) {
  std::uint64_t total = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(directory)) {
    if (entry.is_regular_file() && entry.path().extension() == extension) total += entry.file_size();
  }
  return total;
}

// Thrown rather than exiting, so that the scratch directories are removed on the way out.
[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

struct SpeedSample {
  double unrecorded_eps = 0;  // the same run, not recorded
  double original_eps = 0;    // Items / (last Item - first Item), recorded
  double replay_on_eps = 0;
  double replay_off_eps = 0;
  std::uint64_t events = 0;  // recorded events (on_start, Items, on_stop)
  double log_bytes_per_event = 0;
  bool compared_state = false;
};

double replay_rate(const std::filesystem::path& recording, bool check_outputs, std::uint64_t items,
                   std::uint64_t* events, bool* compared_state) {
  ReplayOptions options;
  options.check_outputs = check_outputs;
  Replay replay = Replay::open(recording, options);
  const Clock::time_point start = Clock::now();
  const std::uint64_t delivered = replay.run();
  const double elapsed = seconds_since(start);
  if (!replay.at_end() || replay.reactor<Counter>().items() != items || replay.reactor<Counter>().keys() == 0) {
    fail("the replay did not reach the recorded end state");
  }
  if (check_outputs && replay.sends().size() != items / 64) fail("the replay did not make the recorded sends");
  *events = delivered;
  *compared_state = replay.compares_state();
  return static_cast<double>(delivered) / elapsed;
}

// One run of the counter fed `items` by a feeder on the other worker, recorded with `recording`
// (mode kOff for none): the rate of its items, from the first to the last (times taken outside
// the heap), and the directory of its recording.
double counter_rate(std::uint64_t items, const reheap::RecordingOptions& recording,
                    std::filesystem::path* recording_dir) {
  g_first_ns = 0;
  g_last_ns = 0;
  g_timing = true;
  {
    reheap::RuntimeConfig config;
    config.workers = 2;
    reheap::Runtime rt(config);
    reheap::SpawnOptions on0;
    on0.name = "counter";
    on0.worker = 0;
    on0.recording = recording;
    const ActorRef counter = rt.spawn<Counter>(on0, items);
    reheap::SpawnOptions on1;
    on1.name = "feeder";
    on1.worker = 1;
    rt.spawn<Feeder>(on1, counter, items);
    if (!rt.wait_idle(std::chrono::minutes(10))) fail("the run did not go idle");
    const reheap::ReactorStats stats = rt.stats(counter);
    if (stats.messages_in != items) fail("the counter got " + std::to_string(stats.messages_in) + " items");
    if (stats.recording_errors != 0) fail("the recording stopped after an error");
    if (recording_dir != nullptr) *recording_dir = recording_of(recording.directory, counter);
  }  // the runtime stops: the counter's log ends with on_stop, and its addresses are free again
  g_timing = false;
  const std::int64_t span_ns = g_last_ns.load() - g_first_ns.load();
  if (g_first_ns.load() == 0 || g_last_ns.load() == 0 || span_ns <= 0) fail("no first/last item time");
  return static_cast<double>(items - 1) / (static_cast<double>(span_ns) * 1e-9);
}

SpeedSample measure_speed(const std::filesystem::path& parent, std::uint64_t items, std::uint32_t hash_every) {
  ScratchDir dir(parent);
  SpeedSample s;
  s.unrecorded_eps = counter_rate(items, reheap::recording_off(), nullptr);  // for scale
  std::filesystem::path recording;
  s.original_eps = counter_rate(items, file_recording(dir.path(), hash_every), &recording);

  s.replay_on_eps = replay_rate(recording, true, items, &s.events, &s.compared_state);
  bool ignored = false;
  s.replay_off_eps = replay_rate(recording, false, items, &s.events, &ignored);
  s.log_bytes_per_event = static_cast<double>(bytes_with_extension(recording, ".rlog")) / static_cast<double>(s.events);
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string rate(double eps) {
  char text[32];
  if (eps >= 1e6) {
    std::snprintf(text, sizeof text, "%.2fM", eps / 1e6);
  } else {
    std::snprintf(text, sizeof text, "%.1fk", eps / 1e3);
  }
  return text;
}

std::string ratio_cell(const std::vector<double>& ratios) {
  char text[64];
  std::snprintf(text, sizeof text, "**%.2fx** (%.2f..%.2f)", median(ratios),
                *std::min_element(ratios.begin(), ratios.end()), *std::max_element(ratios.begin(), ratios.end()));
  return text;
}

void run_speed(const std::filesystem::path& parent, std::uint64_t items, int reps,
               const std::vector<std::uint32_t>& hash_everies) {
  std::printf("\n## Replay speed: %" PRIu64 " Items, %d repetition(s), median (min..max of the per-repetition ratio)\n\n",
              items, reps);
  std::printf("| state_hash_every | events | unrecorded ev/s | original (recorded) ev/s | replay ev/s, checks on | "
              "replay/original | replay ev/s, checks off | replay/original | replay (on)/unrecorded | log B/event | "
              "state compared |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
  std::fflush(stdout);
  for (const std::uint32_t hash_every : hash_everies) {
    std::vector<double> unrecorded, original, on, off, ratio_on, ratio_off, ratio_unrecorded;
    SpeedSample last;
    for (int r = 0; r < reps; ++r) {
      last = measure_speed(parent, items, hash_every);
      unrecorded.push_back(last.unrecorded_eps);
      original.push_back(last.original_eps);
      ratio_unrecorded.push_back(last.replay_on_eps / last.unrecorded_eps);
      on.push_back(last.replay_on_eps);
      off.push_back(last.replay_off_eps);
      ratio_on.push_back(last.replay_on_eps / last.original_eps);
      ratio_off.push_back(last.replay_off_eps / last.original_eps);
      std::fprintf(stderr, "  hash %u rep %d: unrecorded %s/s, original %s/s, replay %s/s (checks on), %s/s (off)\n",
                   hash_every, r + 1, rate(last.unrecorded_eps).c_str(), rate(last.original_eps).c_str(), rate(last.replay_on_eps).c_str(), rate(last.replay_off_eps).c_str());
    }
    std::printf("| %u | %" PRIu64 " | %s | %s | %s | %s | %s | %s | %s | %.1f | %s |\n", hash_every, last.events,
                rate(median(unrecorded)).c_str(), rate(median(original)).c_str(), rate(median(on)).c_str(),
                ratio_cell(ratio_on).c_str(), rate(median(off)).c_str(), ratio_cell(ratio_off).c_str(),
                ratio_cell(ratio_unrecorded).c_str(), last.log_bytes_per_event,
                hash_every == 0 ? "no digests" : (last.compared_state ? "yes" : "NO"));
    std::fflush(stdout);
  }
}

// ---- part 2: seek -------------------------------------------------------------------------------

struct Fill {
  std::uint32_t block;
};
struct Touch {
  std::uint32_t seq;
};

constexpr std::size_t kBlockWords = (std::size_t{1} << 20) / sizeof(std::uint64_t);  // 1 MiB blocks

class Store : public Reactor {
 public:
  Store() {
    handle<&Store::on_fill>();
    handle<&Store::on_touch>();
  }
  void on_fill(const Fill& f) {
    std::vector<std::uint64_t>& block = blocks_.emplace_back(kBlockWords);
    const std::uint64_t base = std::uint64_t{f.block} * kBlockWords;
    for (std::size_t i = 0; i < kBlockWords; ++i) block[i] = mix(base + i);
  }
  void on_touch(const Touch& t) {
    const std::uint64_t h = mix(~std::uint64_t{t.seq});
    std::vector<std::uint64_t>& block = blocks_[h % blocks_.size()];
    std::uint64_t& word = block[(h >> 32) % kBlockWords];
    word ^= h;
    index_[t.seq % 4096] += word;
    ++touches_;
  }
  std::size_t blocks() const { return blocks_.size(); }
  std::uint64_t touches() const { return touches_; }

 private:
  std::vector<std::vector<std::uint64_t>> blocks_;
  std::map<std::uint32_t, std::uint64_t> index_;
  std::uint64_t touches_ = 0;
};

struct SeekTarget {
  std::string what;
  std::uint64_t event;
};

void run_seek(const std::filesystem::path& parent, std::uint32_t heap_mib, std::uint32_t touches) {
  const std::uint64_t heap_bytes = std::uint64_t{heap_mib} << 20;
  const std::uint64_t need = 11 * heap_bytes + (std::uint64_t{1} << 30);
  const std::filesystem::space_info space = std::filesystem::space(parent);
  std::printf("\n## Seek: %u MiB heap (%u blocks of 1 MiB), %u touches, 10 full snapshots\n\n", heap_mib, heap_mib,
              touches);
  if (space.available < need) {
    std::printf("skipped: %s has %.1f GiB free, this part needs about %.1f GiB\n", parent.c_str(),
                static_cast<double>(space.available) / (1 << 30), static_cast<double>(need) / (1 << 30));
    return;
  }
  ScratchDir dir(parent);
  const std::uint64_t messages = std::uint64_t{heap_mib} + touches;
  std::vector<std::filesystem::path> snapshots;
  std::vector<std::uint64_t> snapshot_events;  // events delivered when each was taken
  std::uint64_t snapshot_bytes = 0;
  double snapshot_seconds = 0;
  std::filesystem::path recording;
  const Clock::time_point record_start = Clock::now();
  {
    reheap::RuntimeConfig config;
    config.workers = 2;
    reheap::Runtime rt(config);
    reheap::SpawnOptions options;
    options.name = "store";
    options.worker = 0;
    options.recording = file_recording(dir.path() / "rec", 0);
    std::filesystem::create_directories(options.recording.directory);
    const ActorRef store = rt.spawn<Store>(options);
    std::uint64_t sent = 0;
    for (int slice = 1; slice <= 11; ++slice) {
      const std::uint64_t end = messages * static_cast<std::uint64_t>(slice) / 11;
      for (; sent < end; ++sent) {
        const reheap::SendResult result = sent < heap_mib ? rt.send(store, Fill{static_cast<std::uint32_t>(sent)})
                                                          : rt.send(store, Touch{static_cast<std::uint32_t>(sent)});
        if (result != reheap::SendResult::kOk) fail("a send to the store failed");
      }
      if (!rt.wait_idle(std::chrono::minutes(10))) fail("the store did not go idle");
      if (slice == 11) break;
      const std::filesystem::path file = dir.path() / ("store-" + std::to_string(slice) + ".snap");
      const Clock::time_point start = Clock::now();
      const reheap::SnapshotInfo info = rt.snapshot(store, file);
      snapshot_seconds += seconds_since(start);
      snapshot_bytes += info.bytes_written;
      snapshots.push_back(file);
      snapshot_events.push_back(rt.stats(store).events);
    }
    const reheap::ReactorStats stats = rt.stats(store);
    if (stats.recording_errors != 0) fail("the recording stopped after an error");
    std::printf("recorded: %" PRIu64 " events, heap %.1f MiB committed; 10 snapshots %.2f GiB in %.1f s; at events",
                stats.events + 1, static_cast<double>(stats.heap_committed_bytes) / (1 << 20),
                static_cast<double>(snapshot_bytes) / (1 << 30), snapshot_seconds);
    for (const std::uint64_t e : snapshot_events) std::printf(" %" PRIu64, e);
    std::printf("\n");
    recording = recording_of(options.recording.directory, store);
  }
  std::printf("recording run (sends, fill, snapshots, shutdown): %.1f s\n", seconds_since(record_start));

  ReplayOptions options;
  options.snapshots = snapshots;
  const Clock::time_point open_start = Clock::now();
  Replay replay = Replay::open(recording, options);
  // open() reads which reactor and event each snapshot holds from its run records and the
  // reactor's page (it restored each in full before).
  std::printf("Replay::open (reads the log, probes the anchor and each snapshot): %.3f s\n\n",
              seconds_since(open_start));
  const std::uint64_t last = replay.recorded_events();
  const std::vector<std::uint64_t>& s = snapshot_events;
  // Descending, so that each seek goes back and restores a snapshot (a seek forward from where the
  // replay stands restores nothing when no snapshot lies between).
  const std::vector<SeekTarget> targets = {
      {"the last event (on_stop)", last},
      {"just after snapshot 10", s[9] + 1},
      {"just before snapshot 10", s[9] - 1},
      {"just after snapshot 5", s[4] + 1},
      {"just before snapshot 5", s[4] - 1},
      {"just after snapshot 1", s[0] + 1},
      {"just before snapshot 1 (from the anchor)", s[0] - 1},
  };
  std::printf("| seek to | event | restored (events of the snapshot) | events replayed | last_seek_duration |\n");
  std::printf("| --- | ---: | --- | ---: | ---: |\n");
  std::fflush(stdout);
  for (const SeekTarget& t : targets) {
    replay.seek(t.event);
    if (replay.position() != t.event || replay.reactor<Store>().events_delivered() != t.event) {
      fail("seek(" + std::to_string(t.event) + ") landed elsewhere");
    }
    const std::optional<std::uint64_t> restored = replay.last_seek_restored();
    std::string from = "none (went forward)";
    std::uint64_t replayed = 0;
    if (restored) {
      replayed = t.event - *restored;
      if (*restored == replay.anchor_events()) {
        from = "anchor (" + std::to_string(*restored) + ")";
      } else {
        const auto it = std::find(s.begin(), s.end(), *restored);
        from = it == s.end() ? "? (" + std::to_string(*restored) + ")"
                             : "snapshot " + std::to_string(it - s.begin() + 1) + " (" + std::to_string(*restored) + ")";
      }
    }
    std::printf("| %s | %" PRIu64 " | %s | %" PRIu64 " | %.3f s |\n", t.what.c_str(), t.event, from.c_str(), replayed,
                std::chrono::duration<double>(replay.last_seek_duration()).count());
    std::fflush(stdout);
  }
  if (replay.reactor<Store>().blocks() > heap_mib) fail("the store has too many blocks");

  // Each digest three times; the median. Both read every used page of the heap.
  std::vector<double> portable, raw;
  std::uint64_t sink = 0;
  for (int r = 0; r < 3; ++r) {
    Clock::time_point start = Clock::now();
    sink ^= reheap::state_digest(replay.heap());
    portable.push_back(seconds_since(start));
    start = Clock::now();
    sink ^= reheap::used_pages_digest(replay.heap());
    raw.push_back(seconds_since(start));
  }
  const double mib = static_cast<double>(replay.heap().stats().committed_bytes) / (1 << 20);
  std::printf("\nstate digest of the replayed heap (%.0f MiB committed), median of 3: state_digest %.3f s "
              "(%.2f GiB/s), used_pages_digest %.3f s (%.2f GiB/s) [%016" PRIx64 "]\n",
              mib, median(portable), mib / 1024 / median(portable), median(raw), mib / 1024 / median(raw), sink);
}

std::uint64_t number_after(int& i, int argc, char** argv) {
  if (i + 1 >= argc) fail(std::string(argv[i]) + " wants a value");
  char* end = nullptr;
  const unsigned long long v = std::strtoull(argv[++i], &end, 10);
  if (end == argv[i] || *end != '\0') fail(std::string(argv[i - 1]) + " wants a number");
  return v;
}

int bench_main(int argc, char** argv) {
  std::uint64_t items = 300000;
  int reps = 3;
  std::uint32_t heap_mib = 1024;
  std::uint32_t touches = 100000;
  std::filesystem::path dir = std::filesystem::temp_directory_path();
  bool speed = true;
  bool seek = true;
  std::vector<std::uint32_t> hash_everies = {0, 1000};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      items = 50000;
      reps = 1;
      heap_mib = 64;
      touches = 20000;
    } else if (a == "--events") {
      items = number_after(i, argc, argv);
    } else if (a == "--reps") {
      reps = static_cast<int>(number_after(i, argc, argv));
    } else if (a == "--heap-mib") {
      heap_mib = static_cast<std::uint32_t>(number_after(i, argc, argv));
    } else if (a == "--touches") {
      touches = static_cast<std::uint32_t>(number_after(i, argc, argv));
    } else if (a == "--state-hash-every") {
      if (i + 1 >= argc) fail("--state-hash-every wants a list, e.g. 0,1,1000");
      hash_everies.clear();
      const std::string list = argv[++i];
      for (std::size_t at = 0; at <= list.size();) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        char* end = nullptr;
        const std::string one = list.substr(at, comma - at);
        const unsigned long v = std::strtoul(one.c_str(), &end, 10);
        if (one.empty() || *end != '\0') fail("--state-hash-every wants numbers separated by commas");
        hash_everies.push_back(static_cast<std::uint32_t>(v));
        at = comma + 1;
      }
    } else if (a == "--dir") {
      if (i + 1 >= argc) fail("--dir wants a directory");
      dir = argv[++i];
    } else if (a == "--only" && i + 1 < argc) {
      const std::string part = argv[++i];
      speed = part == "speed";
      seek = part == "seek";
      if (!speed && !seek) fail("--only wants speed or seek");
    } else {
      std::printf(
          "usage: replay_bench [--quick] [--events N] [--reps N] [--heap-mib M] [--touches N] [--dir DIR]\n"
          "                    [--only speed|seek] [--state-hash-every LIST]\n"
          "  --events N    part 1: Items sent to the recorded reactor (default 300000; --quick 50000)\n"
          "  --reps N      part 1: repetitions, each a fresh recording (default 3; --quick 1)\n"
          "  --state-hash-every LIST\n"
          "                part 1: the RecordingOptions::state_hash_every values, one table row\n"
          "                each (default 0,1000; 1 prices the state oracle at every event)\n"
          "  --heap-mib M  part 2: the heap's size in 1 MiB blocks (default 1024; --quick 64)\n"
          "  --touches N   part 2: small events after the fill (default 100000; --quick 20000)\n"
          "  --dir DIR     where the recordings and snapshots go, in a fresh subdirectory removed\n"
          "                at exit (default: the temp directory); part 2 needs ~11 x the heap\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  if (items < 64 || reps < 1 || heap_mib < 11 || touches < 11) fail("sizes too small");
  std::printf("replay_bench: %u CPUs; files under %s\n", std::thread::hardware_concurrency(), dir.c_str());
  if (speed) run_speed(dir, items, reps, hash_everies);
  if (seek) run_seek(dir, heap_mib, touches);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return bench_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "replay_bench: %s\n", e.what());
    return 1;
  }
}
