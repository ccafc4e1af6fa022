// snapshot_bench_map: a 1M-entry std::unordered_map<std::string, std::string> saved and brought
// back, by heap snapshot and by msgpack-c, end to end.
//
// Both sides start from the same map in memory and end with a usable map in memory and its bytes
// in a file: snapshot = save + restore; msgpack = pack into an sbuffer + write the file, then
// read the file + unpack + convert into a new map. Two file policies, the same for both sides:
//   crash-safe: save() (temporary file, fsync, rename, directory fsync) against msgpack written
//               the same way (write_file_crash_safe);
//   no fsync:   write() to a plain FdSink against a plain write(2) of the msgpack bytes.
// Reads hit the page cache on both sides (each file was just written). msgpack's new map is built
// in a fresh reheap heap, so both maps come from the same allocator and the comparison is of the
// formats, not of reheap against glibc malloc. Destroying the old heap (the restore needs its
// chunks) and the msgpack result are outside the timed regions on both sides.
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include <msgpack.hpp>

#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "snapshot_bench.h"

namespace snapbench {
namespace {

using Map = std::unordered_map<std::string, std::string>;
constexpr std::size_t kValueBytes = 100;

std::string key_of(std::size_t i) { return fmt("key-%07zu", i); }

// 100 bytes that depend on i everywhere, so a misplaced value is caught by check_map.
std::string value_of(std::size_t i) {
  std::string v(kValueBytes, ' ');
  std::uint64_t x = i * 0x9E3779B97F4A7C15ull + 1;
  for (char& c : v) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>('!' + x % 90);
  }
  return v;
}

reheap::HeapPtr build_map_heap(std::size_t n) {
  reheap::HeapPtr heap = reheap::Heap::create();
  reheap::HeapScope scope(*heap);  // every node, key and value below lands in `heap`
  auto* map = new Map;
  map->reserve(n);
  for (std::size_t i = 0; i < n; ++i) map->emplace(key_of(i), value_of(i));
  heap->set_root(map);
  return heap;
}

// Size and a few entries spread over the key range. Lookups allocate nothing (keys fit the small
// string buffer; expected values are built on the system allocator, outside any heap scope).
bool check_map(const Map* map, std::size_t n, const char* what) {
  if (map == nullptr || map->size() != n) {
    std::printf("BUG: %s: map has %zu entries, expected %zu\n", what,
                map == nullptr ? std::size_t{0} : map->size(), n);
    return false;
  }
  for (const std::size_t i : {std::size_t{0}, n / 3, n / 2, n - 1, (n * 7) / 11}) {
    const auto it = map->find(key_of(i));
    if (it == map->end() || it->second != value_of(i)) {
      std::printf("BUG: %s: entry %zu is %s\n", what, i,
                  it == map->end() ? "missing" : "wrong");
      return false;
    }
  }
  return true;
}

template <class F>
double timed(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return seconds_since(t0);
}

struct Pair {
  std::vector<double> out, in, total;
  std::uint64_t bytes = 0;
  void add(double o, double i) {
    out.push_back(o);
    in.push_back(i);
    total.push_back(o + i);
  }
};

// save (or write to an FdSink) and restore, `reps` times; each repetition saves the heap the
// previous one restored, so the round trip is also checked to be repeatable.
Pair snapshot_round_trips(reheap::HeapPtr& heap, const Options& o, bool crash_safe) {
  const auto file = o.dir / (crash_safe ? "map-save.snap" : "map-sink.snap");
  Pair p;
  for (int r = 0; r < o.map_reps; ++r) {
    remove_file(file);
    prepare_step(o, o.map_entries * 256);  // about the heap's size
    reheap::SnapshotInfo info;
    const double out = timed([&] {
      reheap::Snapshotter snap(*heap);
      if (crash_safe) {
        info = snap.save(file);
      } else {
        FdSink sink(file);
        info = snap.write(sink);
        sink.close();
      }
    });
    p.bytes = bytes_on_disk(file);
    heap.reset();
    prepare_step(o, p.bytes);
    const double in = timed([&] { heap = reheap::restore(file); });
    check_map(static_cast<const Map*>(heap->root()), o.map_entries, "snapshot round trip");
    p.add(out, in);
  }
  remove_file(file);
  return p;
}

Pair msgpack_round_trips(const Map& source, const Options& o, bool crash_safe) {
  const auto file = o.dir / (crash_safe ? "map-fsync.msgpack" : "map-plain.msgpack");
  Pair p;
  for (int r = 0; r < o.map_reps; ++r) {
    remove_file(file);
    prepare_step(o, o.map_entries * 256);  // the packed buffer, the file, the new map
    const double out = timed([&] {
      msgpack::sbuffer buffer;  // malloc'ed: no heap is current here
      msgpack::pack(buffer, source);
      if (crash_safe) {
        write_file_crash_safe(file, buffer.data(), buffer.size());
      } else {
        write_file_plain(file, buffer.data(), buffer.size());
      }
    });
    p.bytes = bytes_on_disk(file);
    reheap::HeapPtr target = reheap::Heap::create();
    Map* map = nullptr;
    prepare_step(o, o.map_entries * 256);
    const double in = timed([&] {
      const std::vector<char> data = read_whole_file(file);
      reheap::HeapScope scope(*target);
      const msgpack::object_handle handle = msgpack::unpack(data.data(), data.size());
      map = new Map;
      handle.get().convert(*map);
      // The handle's zone is freed here, inside the scope that allocated it, and inside the timed
      // region: a real reader pays for it too.
    });
    check_map(map, o.map_entries, "msgpack round trip");
    target.reset();  // region semantics: the map goes with its heap
    p.add(out, in);
  }
  remove_file(file);
  return p;
}

const char* const kSection = "1M-entry map";

std::string msgpack_row(const std::string& policy) {
  return "msgpack: pack+write, read+unpack+convert (" + policy + ")";
}

void add_snapshot_row(Results& results, const std::string& policy, const Pair& snap,
                      const Pair& mp) {
  Row& row = results.add(kSection, "snapshot: save + restore (" + policy + ")", snap.bytes);
  row.seconds = snap.total;
  row.baseline = msgpack_row(policy);
  row.note = fmt("out %.3f s + in %.3f s; msgpack out %.3f s + in %.3f s", median(snap.out),
                 median(snap.in), median(mp.out), median(mp.in));
}

}  // namespace

void run_map_benchmark(const Options& options, Results& results) {
  std::printf("building a %zu-entry unordered_map in a heap...\n", options.map_entries);
  reheap::HeapPtr heap = build_map_heap(options.map_entries);
  const reheap::HeapStats st = heap->stats();
  std::printf("map heap: %.1f MiB committed, %zu live blocks\n",
              static_cast<double>(st.committed_bytes) / kMiB, st.live_blocks);
  check_map(static_cast<const Map*>(heap->root()), options.map_entries, "built map");

  // msgpack first, from the original map; then the snapshot side, which replaces the heap with
  // its restored copy at every repetition.
  const Pair mp_safe = msgpack_round_trips(*static_cast<const Map*>(heap->root()), options, true);
  const Pair mp_plain = msgpack_round_trips(*static_cast<const Map*>(heap->root()), options, false);
  results.add(kSection, msgpack_row("fsync"), mp_safe.bytes).seconds = mp_safe.total;
  results.add(kSection, msgpack_row("no fsync"), mp_plain.bytes).seconds = mp_plain.total;
  const Pair snap_safe = snapshot_round_trips(heap, options, true);
  add_snapshot_row(results, "fsync", snap_safe, mp_safe);
  const Pair snap_plain = snapshot_round_trips(heap, options, false);
  add_snapshot_row(results, "no fsync", snap_plain, mp_plain);
  results.summary("map_snapshot_bytes", std::to_string(snap_safe.bytes));
  results.summary("map_msgpack_bytes", std::to_string(mp_safe.bytes));
  results.summary("map_speedup_fsync",
                  fmt("%.2f", median(mp_safe.total) / median(snap_safe.total)));
  results.summary("map_speedup_nofsync",
                  fmt("%.2f", median(mp_plain.total) / median(snap_plain.total)));
}

}  // namespace snapbench
