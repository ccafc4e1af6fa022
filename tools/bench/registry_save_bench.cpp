// registry_save_bench: what the registry of a node's saved snapshots (zone.h, "Held for restore")
// adds to a save, and to a process's start.
//
// The identity (and so whether there is a state directory) is settled once per process, so the
// bench runs itself as children, alternating a child without a state directory and one with, in
// the same run: each child saves one small heap (about 40 pages) in a loop and prints the median
// and the 10th and 90th percentiles of
//   - same:    a save replacing the same file (what a service saving in place does: the registry
//              lists the file, so the save only takes the node's flock around its rename);
//   - renamed: a save under a new name, then remove_snapshot() of the one before (a rotating
//              recording anchor: a line appended and fsynced per save, a rewrite per 32 saves);
// and a start child times the first Heap::create() (the zone's reservation, which reads the
// registry and the header of each listed file) with 0 and 200 listed files, and a held child
// saves and destroys 1,000 heaps (the address space their held chunks keep). Save times are wall
// clock and include the file's own fsyncs (temporary, directory), which dominate on a disk:
// compare the two configurations of one run, not runs of different days.
//
//   registry_save_bench [rounds]   (default 5; writes under $TMPDIR)
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

struct Spread {
  double median = 0;
  double p10 = 0;
  double p90 = 0;
};

Spread spread_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return Spread{v[v.size() / 2], v[v.size() / 10], v[v.size() * 9 / 10]};
}

reheap::HeapPtr small_heap() {
  reheap::HeapPtr heap = reheap::Heap::create();
  reheap::HeapScope scope(*heap);
  auto* strings = new std::vector<std::string>;
  for (int i = 0; i < 2000; ++i) strings->emplace_back(40 + i % 50, 'x');
  heap->set_root(strings);
  return heap;
}

int child_saves(const std::filesystem::path& dir, int saves) {
  reheap::HeapPtr heap = small_heap();
  reheap::Snapshotter snapshots(*heap, reheap::WriteTracking::kOff);
  for (int i = 0; i < 20; ++i) snapshots.save(dir / "same.snap");  // warm-up
  std::vector<double> same;
  for (int i = 0; i < saves; ++i) {
    const auto t0 = Clock::now();
    snapshots.save(dir / "same.snap");
    same.push_back(us_since(t0));
  }
  std::vector<double> renamed;
  std::filesystem::path previous;
  for (int i = 0; i < saves; ++i) {
    const std::filesystem::path file = dir / ("r-" + std::to_string(i) + ".snap");
    const auto t0 = Clock::now();
    snapshots.save(file);
    if (!previous.empty()) reheap::remove_snapshot(previous);
    renamed.push_back(us_since(t0));
    previous = file;
  }
  for (const auto& [name, v] : {std::pair{"same", same}, std::pair{"renamed", renamed}}) {
    const Spread s = spread_of(v);
    std::printf("%s %.1f %.1f %.1f\n", name, s.median, s.p10, s.p90);
  }
  return 0;
}

int child_start(const std::filesystem::path& dir, int listed) {
  // The files to list are saved by the previous child of this kind (same state directory).
  if (listed > 0 && !std::filesystem::exists(dir / "l-0.snap")) {
    for (int i = 0; i < listed; ++i) {
      reheap::HeapPtr heap = small_heap();
      reheap::Snapshotter(*heap, reheap::WriteTracking::kOff).save(dir / ("l-" + std::to_string(i) + ".snap"));
    }
    std::printf("prepared\n");
    return 0;
  }
  const auto t0 = Clock::now();
  reheap::HeapPtr heap = reheap::Heap::create();
  std::printf("start %.1f\n", us_since(t0));
  return 0;
}

// The kB of a /proc/self/status field ("VmSize", "VmRSS", "VmPTE").
long status_kb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0 && line[std::strlen(key)] == ':') return std::atol(line.c_str() + std::strlen(key) + 1);
  }
  return -1;
}

// `n` heaps saved, each to its own file, and destroyed: what the chunks they leave held cost.
int child_held(const std::filesystem::path& dir, int n) {
  reheap::HeapPtr first = small_heap();  // the zone is reserved before the first reading
  const long size0 = status_kb("VmSize");
  const long rss0 = status_kb("VmRSS");
  const long pte0 = status_kb("VmPTE");
  for (int i = 0; i < n; ++i) {
    reheap::HeapPtr heap = small_heap();
    reheap::Snapshotter(*heap, reheap::WriteTracking::kOff).save(dir / ("h-" + std::to_string(i) + ".snap"));
  }
  reheap::Zone::purge_heap_cache();
  const reheap::ZoneStats z = reheap::Zone::stats();
  std::printf("held %zu %zu %ld %ld %ld\n", z.held_chunks, z.quarantined_chunks, status_kb("VmSize") - size0,
              status_kb("VmRSS") - rss0, status_kb("VmPTE") - pte0);
  return 0;
}

// Runs this program as a child with `args` and `env` added; returns its stdout.
std::string run(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  int out[2];
  if (::pipe(out) != 0) std::exit(1);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    ::close(out[1]);
    for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv{const_cast<char*>("/proc/self/exe")};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv("/proc/self/exe", argv.data());
    std::_Exit(127);
  }
  ::close(out[1]);
  std::string text;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(out[0], buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "registry_save_bench: a child failed: %s\n", text.c_str());
    std::exit(1);
  }
  return text;
}

double field(const std::string& text, const std::string& key, int index) {
  const std::size_t at = text.find(key + " ");
  if (at == std::string::npos) return -1;
  const char* p = text.c_str() + at + key.size();
  double v = 0;
  for (int i = 0; i <= index; ++i) v = std::strtod(p, const_cast<char**>(&p));
  return v;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--saves") == 0) return child_saves(argv[2], std::atoi(argv[3]));
  if (argc == 4 && std::strcmp(argv[1], "--start") == 0) return child_start(argv[2], std::atoi(argv[3]));
  if (argc == 4 && std::strcmp(argv[1], "--held") == 0) return child_held(argv[2], std::atoi(argv[3]));
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const char* tmp = std::getenv("TMPDIR");
  const std::filesystem::path root =
      std::filesystem::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") / ("registry_save_bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root);
  std::printf("registry_save_bench: %s, %ld cores, files under %s\n", cpu_model().c_str(), ::sysconf(_SC_NPROCESSORS_ONLN),
              root.c_str());
  const int saves = 200;
  // On the disk of TMPDIR every save waits for its fsyncs, which dominate and vary; on tmpfs
  // (/dev/shm) fsync returns at once, which leaves what the registry costs in system calls.
  std::vector<std::filesystem::path> bases{root};
  if (std::filesystem::is_directory("/dev/shm")) bases.push_back("/dev/shm/registry_save_bench-" + std::to_string(::getpid()));
  for (const std::filesystem::path& base : bases) {
    std::printf("\nsaves of a 40-page heap under %s, median [p10, p90] of %d saves per child:\n", base.c_str(), saves);
    std::printf("%-6s %-22s %-22s %-22s %-22s\n", "round", "same, no dir (us)", "same, state dir (us)",
                "renamed, no dir (us)", "renamed, state dir (us)");
    std::vector<double> added_same;
    std::vector<double> added_renamed;
    for (int r = 0; r < rounds; ++r) {
      double result[2][2][3];
      for (int with = 0; with < 2; ++with) {
        const std::filesystem::path dir = base / ("saves-" + std::to_string(r) + "-" + std::to_string(with));
        std::filesystem::create_directories(dir);
        std::vector<std::string> env;
        if (with == 1) env.push_back("REHEAP_STATE_DIR=" + (dir / "state").string());
        const std::string out = run({"--saves", dir.string(), std::to_string(saves)}, env);
        for (int k = 0; k < 3; ++k) {
          result[with][0][k] = field(out, "same", k);
          result[with][1][k] = field(out, "renamed", k);
        }
      }
      std::printf("%-6d", r);
      for (int kind = 0; kind < 2; ++kind) {
        for (int with = 0; with < 2; ++with) {
          char cell[64];
          std::snprintf(cell, sizeof cell, "%.0f [%.0f, %.0f]", result[with][kind][0], result[with][kind][1],
                        result[with][kind][2]);
          std::printf(" %-22s", cell);
        }
      }
      std::printf("\n");
      added_same.push_back(result[1][0][0] - result[0][0][0]);
      added_renamed.push_back(result[1][1][0] - result[0][1][0]);
    }
    const Spread same = spread_of(added_same);
    const Spread renamed = spread_of(added_renamed);
    std::printf("added by the state dir, median of rounds [min, max]: same file %+.0f us [%+.0f, %+.0f], new names "
                "%+.0f us [%+.0f, %+.0f]\n",
                same.median, *std::min_element(added_same.begin(), added_same.end()),
                *std::max_element(added_same.begin(), added_same.end()), renamed.median,
                *std::min_element(added_renamed.begin(), added_renamed.end()),
                *std::max_element(added_renamed.begin(), added_renamed.end()));
  }
  std::printf("\n");

  // Starts: the zone's reservation with an empty registry and with 200 listed files, on tmpfs if
  // there is one (the incarnation counter's fsyncs would drown the registry's reads otherwise).
  const std::filesystem::path start_dir = bases.back() / "start";
  std::filesystem::create_directories(start_dir);
  const std::vector<std::string> start_env{"REHEAP_STATE_DIR=" + (start_dir / "state").string()};
  std::vector<double> none;
  std::vector<double> empty;
  std::vector<double> listed;
  run({"--start", start_dir.string(), "200"}, start_env);  // prepares the 200 files
  for (int r = 0; r < rounds; ++r) {
    none.push_back(field(run({"--start", start_dir.string(), "0"}, {}), "start", 0));
    empty.push_back(field(run({"--start", start_dir.string(), "0"},
                              {"REHEAP_STATE_DIR=" + (start_dir / ("empty-" + std::to_string(r))).string()}),
                          "start", 0));
    listed.push_back(field(run({"--start", start_dir.string(), "200"}, start_env), "start", 0));
  }
  const Spread a = spread_of(none);
  const Spread b = spread_of(empty);
  const Spread c = spread_of(listed);
  std::printf("first Heap::create (zone reservation) under %s, median [p10, p90] of %d: no state dir %.0f us "
              "[%.0f, %.0f], empty registry %.0f us [%.0f, %.0f], 200 listed files %.0f us [%.0f, %.0f]\n",
              start_dir.c_str(), rounds, a.median, a.p10, a.p90, b.median, b.p10, b.p90, c.median, c.p10, c.p90);

  // Address space: 1,000 heaps saved and destroyed, with and without a state directory.
  for (int with = 0; with < 2; ++with) {
    const std::filesystem::path dir = root / ("held-" + std::to_string(with));
    std::filesystem::create_directories(dir);
    std::vector<std::string> env;
    if (with == 1) env.push_back("REHEAP_STATE_DIR=" + (dir / "state").string());
    const std::string out = run({"--held", dir.string(), "1000"}, env);
    std::printf("1000 heaps saved and destroyed, %s: %.0f chunks held (%.1f GiB of address space), %.0f in "
                "quarantine; VmSize %+.0f MiB, VmRSS %+.0f MiB, VmPTE %+.0f kB\n",
                with == 1 ? "state dir" : "no state dir", field(out, "held", 0), field(out, "held", 0) / 16,
                field(out, "held", 1), field(out, "held", 2) / 1024, field(out, "held", 3) / 1024, field(out, "held", 4));
  }
  for (const std::filesystem::path& base : bases) std::filesystem::remove_all(base);
  return 0;
}
