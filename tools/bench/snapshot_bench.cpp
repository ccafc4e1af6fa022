// snapshot_bench: what heap snapshots cost, against what the disk and a serializer cost.
//
// One run measures, in this order:
//   1. a 1 GiB heap of mixed-size, non-zero blocks: a full crash-safe save(), a write() to a
//      plain fd sink, and restore(), each against raw write(2)/read(2) of the same number of
//      bytes (snapshot_bench_heap.cpp; reads cold when the page cache can be dropped, and warm);
//   2. increments on that heap after 0.1%, 1% and 10% of its pages were written, against the full
//      save, and the restore of the resulting chain;
//   3. a 1M-entry unordered_map<string, string> brought back by snapshot+restore against
//      msgpack-c pack/write/read/unpack/convert, end to end (snapshot_bench_map.cpp).
// It prints the machine, one markdown table (median and min..max over the repetitions), the
// targets met or not, and `SUMMARY key=value` lines for scripts. Why it is fair is written at the
// top of each measurement's file; the short version: same bytes, same syscalls, same fsync
// policy, same allocator for both maps, every restore checked, no cache state left unsaid.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "reheap/snapshot_error.h"
#include "snapshot_bench.h"

namespace snapbench {

Row& Results::add(std::string section, std::string name, std::uint64_t bytes) {
  rows_.push_back(Row{std::move(section), std::move(name), bytes, {}, {}, false, {}});
  return rows_.back();
}

const Row* Results::find(const std::string& name) const {
  for (const Row& r : rows_) {
    if (r.name == name && !r.seconds.empty()) return &r;
  }
  return nullptr;
}

void Results::summary(const std::string& key, const std::string& value) {
  summary_.emplace_back(key, value);
}

void Results::print_table() const {
  std::printf("\n| section | operation | MB | median s | min..max s | GB/s | vs baseline "
              "| notes |\n");
  std::printf("|---|---|---:|---:|---:|---:|---|---|\n");
  for (const Row& r : rows_) {
    if (r.seconds.empty()) continue;
    const double m = median(r.seconds);
    std::string vs = "";
    if (const Row* b = r.baseline.empty() ? nullptr : find(r.baseline)) {
      const double bm = median(b->seconds);
      vs = r.time_ratio ? fmt("%.1f%% of the time of \"%s\"", 100.0 * m / bm, b->name.c_str())
                        : fmt("%.2fx \"%s\"", bm / m, b->name.c_str());
    }
    std::printf("| %s | %s | %.1f | %.3f | %.3f..%.3f | %.2f | %s | %s |\n", r.section.c_str(),
                r.name.c_str(), static_cast<double>(r.bytes) / 1e6, m, min_of(r.seconds),
                max_of(r.seconds), static_cast<double>(r.bytes) / m / 1e9, vs.c_str(),
                r.note.c_str());
  }
  std::printf("\nGB = 1e9 bytes; MB = 1e6 bytes. \"N.NNx\" is baseline time / this time (above 1: "
              "faster than the baseline).\n");
}

void Results::print_summary() const {
  for (const auto& [key, value] : summary_) {
    std::printf("SUMMARY %s=%s\n", key.c_str(), value.c_str());
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double min_of(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}
double max_of(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

std::string fmt(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

}  // namespace snapbench

namespace {

using namespace snapbench;

void usage() {
  std::printf(
      "usage: snapshot_bench [--dir DIR] [--reps N] [--map-reps N] [--heap-mib N]\n"
      "                      [--entries N] [--no-cold] [--no-prime] [--only heap|map]\n"
      "  --dir DIR      where the files go (a fresh subdirectory, removed at the end);\n"
      "                 default /var/tmp. The 1 GiB part needs 3 GiB free there.\n"
      "  --reps N       repetitions of the 1 GiB measurements (default 3)\n"
      "  --map-reps N   repetitions of the map round trips (default 5)\n"
      "  --heap-mib N   live MiB in the big heap (default 1024)\n"
      "  --entries N    entries of the map (default 1000000)\n"
      "  --no-cold      do not drop the page cache (cold reads are then not measured)\n"
      "  --no-prime     do not touch 2x the step's bytes of memory before each timed step\n");
}

std::string first_line_with(const char* file, const char* prefix) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "?";
}

void print_machine(const Options& o) {
  utsname u{};
  ::uname(&u);
  std::string cpu = first_line_with("/proc/cpuinfo", "model name");
  cpu = cpu.substr(std::min(cpu.find(':') + 2, cpu.size()));
  std::printf("machine: %s, %ld CPUs online, %s\n", cpu.c_str(), ::sysconf(_SC_NPROCESSORS_ONLN),
              first_line_with("/proc/meminfo", "MemTotal").c_str());
  std::printf("kernel: %s %s\n", u.sysname, u.release);
  std::printf("files: %s (%s, %.1f GiB free)\n", o.dir.c_str(), filesystem_name(o.dir).c_str(),
              static_cast<double>(free_bytes(o.dir)) / kGiB);
  std::printf("repetitions: %d (1 GiB heap), %d (map); times are steady_clock medians\n", o.reps,
              o.map_reps);
  // Free page reporting (virtio-balloon) makes first touches of fresh memory slow; see
  // prime_memory() in snapshot_bench.h.
  const std::string reporting =
      first_line_with("/sys/module/page_reporting/parameters/min_free_ms", "");
  std::printf("free page reporting: %s; memory priming before timed steps: %s\n",
              reporting == "?" ? "not present" : ("on, min_free_ms=" + reporting).c_str(),
              o.prime ? "on" : "off (--no-prime)");
}

bool parse(int argc, char** argv, Options& o) {
  o.dir = "/var/tmp";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--help" || a == "-h") {
      usage();
      std::exit(0);
    } else if (a == "--no-cold") {
      o.cold = false;
    } else if (a == "--no-prime") {
      o.prime = false;
    } else if (a == "--dir" && has_value) {
      o.dir = argv[++i];
    } else if (a == "--reps" && has_value) {
      o.reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--map-reps" && has_value) {
      o.map_reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--heap-mib" && has_value) {
      o.heap_bytes = std::strtoull(argv[++i], nullptr, 10) * kMiB;
    } else if (a == "--entries" && has_value) {
      o.map_entries = std::max<std::size_t>(16, std::strtoull(argv[++i], nullptr, 10));
    } else if (a == "--only" && has_value) {
      const std::string which = argv[++i];
      o.run_heap = which == "heap";
      o.run_map = which == "map";
    } else {
      usage();
      return false;
    }
  }
  return true;
}

// Runs one part; a SnapshotError is a finding, not a reason to lose the other part's numbers.
template <class F>
void run_part(const char* name, Results& results, F&& f) {
  try {
    f();
  } catch (const reheap::SnapshotError& e) {
    std::printf("FAILED: %s: SnapshotError(%s): %s\n", name, reheap::to_string(e.code()), e.what());
    results.summary(std::string(name) + "_error", '"' + std::string(e.what()) + '"');
  } catch (const std::exception& e) {
    std::printf("FAILED: %s: %s\n", name, e.what());
    results.summary(std::string(name) + "_error", '"' + std::string(e.what()) + '"');
  }
}

void print_targets(const Results& r) {
  std::printf("\ntargets:\n");
  const auto ratio = [&](const char* name, const char* base, bool time_ratio, double goal,
                         const char* what) {
    const Row* a = r.find(name);
    const Row* b = r.find(base);
    if (a == nullptr || b == nullptr) {
      std::printf("  %-58s not measured\n", what);
      return;
    }
    const double x = time_ratio ? median(a->seconds) / median(b->seconds)
                                : median(b->seconds) / median(a->seconds);
    const bool met = time_ratio ? x <= goal : x >= goal;
    std::printf("  %-58s %7.2f%s  %s\n", what, time_ratio ? 100 * x : x, time_ratio ? "%" : "x",
                met ? "met" : "NOT met");
  };
  ratio("save(path) full, crash-safe (fsync)", "raw write(2) + fsync", false, 0.8,
        "save() >= 80% of raw write+fsync");
  ratio("write(FdSink) full, no fsync", "raw write(2), no fsync", false, 0.8,
        "write(sink) >= 80% of raw write");
  ratio("restore(path), cold", "raw read(2), cold", false, 0.8,
        "restore cold >= 80% of raw read cold");
  ratio("restore(path), warm (page cache)", "raw read(2), warm (page cache)", false, 0.8,
        "restore warm >= 80% of raw read warm");
  ratio("save_increment, 1% pages dirtied", "save(path) full, crash-safe (fsync)", true, 0.05,
        "increment at 1% dirty <= 5% of full save time");
  ratio("snapshot: save + restore (fsync)",
        "msgpack: pack+write, read+unpack+convert (fsync)", false, 5.0,
        "map snapshot+restore >= 5x msgpack (fsync)");
  ratio("snapshot: save + restore (no fsync)",
        "msgpack: pack+write, read+unpack+convert (no fsync)", false, 5.0,
        "map snapshot+restore >= 5x msgpack (no fsync)");
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse(argc, argv, options)) return 2;
  // A fresh subdirectory, so that nothing of the user's is overwritten or removed.
  std::string tmpl = (options.dir / "reheap-snapbench-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::perror(("snapshot_bench: mkdtemp in " + options.dir.string()).c_str());
    return 1;
  }
  options.dir = tmpl;
  print_machine(options);

  Results results;
  results.summary("memory_primed", options.prime ? "yes" : "no");
  if (options.run_heap) run_part("heap", results, [&] { run_heap_benchmark(options, results); });
  if (options.run_map) run_part("map", results, [&] { run_map_benchmark(options, results); });

  results.print_table();
  print_targets(results);
  std::printf("\n");
  results.print_summary();

  std::error_code ec;
  std::filesystem::remove_all(options.dir, ec);
  return 0;
}
