// snapshot_bench: the parts shared by the snapshot benchmark's files.
//
//   snapshot_bench.cpp       options, machine description, the table, targets and summary
//   snapshot_bench_io.cpp    the file side: a plain fd sink, raw write(2)/read(2) baselines,
//                            page-cache dropping, free space
//   snapshot_bench_heap.cpp  the 1 GiB heap: full save/write/restore vs raw I/O, increments
//   snapshot_bench_map.cpp   a 1M-entry unordered_map: snapshot+restore vs msgpack
//
// Every measurement becomes a Row: the repetitions' times and the bytes moved, optionally with
// the raw baseline it is compared against. The rows are printed together at the end, so that one
// run gives one table. Nothing declared here allocates in a reheap heap: the benchmark keeps its
// own bookkeeping on the system allocator (no HeapScope is open while rows are recorded).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "reheap/byte_stream.h"

namespace snapbench {

inline constexpr std::size_t kMiB = std::size_t{1} << 20;
inline constexpr std::size_t kGiB = std::size_t{1} << 30;

struct Options {
  std::filesystem::path dir;            // where the files go (a fresh subdirectory of it)
  std::size_t heap_bytes = kGiB;        // live bytes put into the big heap
  std::size_t map_entries = 1'000'000;  // entries of the unordered_map
  int reps = 3;                         // repetitions of the 1 GiB measurements
  int map_reps = 5;                     // repetitions of the map round trips
  bool cold = true;                     // try to drop the page cache before cold reads
  bool prime = true;                    // touch fresh memory before each timed step (see below)
  bool run_heap = true;
  bool run_map = true;
};

// One line of the table. `seconds` holds one entry per repetition; `baseline` (optional) names
// the row whose median this one is compared with, as a throughput ratio (baseline time / time).
struct Row {
  std::string section;
  std::string name;
  std::uint64_t bytes = 0;
  std::vector<double> seconds;
  std::string baseline;
  bool time_ratio = false;  // report time / baseline time (increments) instead of throughput
  std::string note;
};

class Results {
 public:
  Row& add(std::string section, std::string name, std::uint64_t bytes = 0);
  const Row* find(const std::string& name) const;
  void summary(const std::string& key, const std::string& value);
  void print_table() const;
  void print_summary() const;

 private:
  std::vector<Row> rows_;
  std::vector<std::pair<std::string, std::string>> summary_;
};

double median(std::vector<double> v);
double min_of(const std::vector<double>& v);
double max_of(const std::vector<double>& v);
std::string fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Seconds elapsed since `start`, on the steady clock.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ---------------------------------------------------------------------------------------------
// The file side (snapshot_bench_io.cpp). Errors print the call and errno and exit: a benchmark
// whose I/O fails has nothing honest left to report.

// A ByteSink writing straight to a file descriptor with write(2): no buffering and no fsync, so
// that Snapshotter::write() is measured with exactly the syscalls it asks for. It counts them.
class FdSink final : public reheap::ByteSink {
 public:
  explicit FdSink(const std::filesystem::path& file);  // creates or truncates
  ~FdSink() override;
  FdSink(const FdSink&) = delete;
  FdSink& operator=(const FdSink&) = delete;

  void write(const void* data, std::size_t size) override;
  void close();  // closes the fd (without fsync); the destructor does it otherwise

  std::uint64_t calls() const noexcept { return calls_; }
  std::uint64_t bytes() const noexcept { return bytes_; }

 private:
  int fd_ = -1;
  std::uint64_t calls_ = 0;
  std::uint64_t bytes_ = 0;
};

// An anonymous private mapping of `bytes`, filled with non-zero pseudo-random words (populated:
// every page is faulted in before it is returned), for the raw write baseline.
unsigned char* map_filled_buffer(std::size_t bytes, std::uint64_t seed);
void unmap_buffer(void* p, std::size_t bytes);

// write(2) `bytes` from `buffer` to a new `file` in large calls; fsync before close when asked.
void raw_write_file(const std::filesystem::path& file, const void* buffer, std::size_t bytes,
                    bool fsync_file);

// read(2) all of `file` into a freshly mapped (not yet faulted) buffer, then unmap it: the
// baseline for restore, which also fills memory that was not resident before.
std::uint64_t raw_read_file_fresh(const std::filesystem::path& file);

// Writes `data` crash-safely as save() does: temporary file, fsync, rename, fsync of directory.
void write_file_crash_safe(const std::filesystem::path& file, const void* data, std::size_t size);
void write_file_plain(const std::filesystem::path& file, const void* data, std::size_t size);
std::vector<char> read_whole_file(const std::filesystem::path& file);

// sync(2), then "1" into /proc/sys/vm/drop_caches (clean page cache). False when not permitted.
bool drop_page_cache();
// sync(2) only: flushes what an earlier, unsynced row left dirty, so it is not charged here.
void flush_dirty();

// Maps, touches and unmaps `bytes` of anonymous memory. On a VM whose guest hands freed pages
// back to the host at once (virtio free page reporting), the first touch of a page the host took
// back costs a host fault: writing 1 GiB into fresh page cache then took 2-3 s instead of 0.3 s,
// at random. Touching memory just before a timed step puts the kernel's free lists in the same,
// host-backed state for every row, so the rows compare the software rather than the hypervisor.
void prime_memory(std::size_t bytes);

// flush_dirty(), then prime_memory(2 * bytes) unless --no-prime: called before every timed step.
void prepare_step(const Options& options, std::size_t bytes);

std::uint64_t free_bytes(const std::filesystem::path& dir);
std::string filesystem_name(const std::filesystem::path& dir);
std::uint64_t bytes_on_disk(const std::filesystem::path& file);
void remove_file(const std::filesystem::path& file);

// ---------------------------------------------------------------------------------------------
// The measurements.
void run_heap_benchmark(const Options& options, Results& results);
void run_map_benchmark(const Options& options, Results& results);

}  // namespace snapbench
