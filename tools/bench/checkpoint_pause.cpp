// checkpoint_pause: what a reactor waits for during a snapshot, per reactor and whole-process.
//
// A 2-worker runtime holds --reactors reactors, each with a heap of --heap-mib MiB (a std::vector
// of pseudo-random words), every one tracked for increments (one full snapshot taken first). Then,
// --reps times each, median and spread:
//   reactor full       Runtime::snapshot of one reactor: its pause (the save runs between two of
//                      its events; the other reactors go on)
//   reactor increment  Runtime::snapshot_increment after 1% of its pages were written
//   process barrier    Runtime::checkpoint_process with the simulated engine (no dump): the
//                      barrier, parking timers, suspending and reopening write tracking and the
//                      resume - what reheap adds to a CRIU dump, for which every reactor waits
// CRIU's own freeze (the dump) comes on top of the last line and grows with the process's memory;
// README.md compares with published figures, since CRIU cannot run on these machines.
//
// usage: checkpoint_pause [--reactors N] [--heap-mib M] [--reps R] [--dir DIR]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "reheap/runtime.h"
#include "reheap/simulated_checkpoint.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Fill {
  std::uint64_t words = 0;
};
struct Touch {
  std::uint64_t every = 0;  // write one word per this many
  std::uint64_t seed = 0;
};

class Holder : public reheap::Reactor {
 public:
  Holder() {
    handle<&Holder::on_fill>();
    handle<&Holder::on_touch>();
  }
  void on_fill(const Fill& f) {
    data_.resize(f.words);
    std::uint64_t x = 88172645463325252ull;
    for (auto& w : data_) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      w = x;
    }
  }
  void on_touch(const Touch& t) {
    for (std::size_t i = 0; i < data_.size(); i += t.every) data_[i] += t.seed;
  }

 private:
  std::vector<std::uint64_t> data_;
};

// A file name; snprintf, since GCC 12 warns falsely (-Wrestrict) on std::string concatenation.
std::string name(const char* prefix, long n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%ld.snap", prefix, n);
  return buf;
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void report(const char* what, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::printf("%-20s median %9.3f ms   (%.3f .. %.3f)\n", what, v[v.size() / 2], v.front(), v.back());
}

}  // namespace

int main(int argc, char** argv) {
  int reactors = 8, reps = 5;
  std::size_t heap_mib = 64;
  std::filesystem::path dir = std::filesystem::temp_directory_path();
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--reactors")) reactors = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--heap-mib")) heap_mib = std::strtoul(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--dir")) dir = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: %s [--reactors N] [--heap-mib M] [--reps R] [--dir DIR]\n", argv[0]);
      return 2;
    }
  }
  const std::filesystem::path work = dir / name("checkpoint_pause.", ::getpid());
  std::filesystem::create_directories(work);
  {
    reheap::Runtime rt(reheap::RuntimeConfig{.workers = 2});
    std::vector<reheap::ActorRef> refs;
    for (int i = 0; i < reactors; ++i) {
      refs.push_back(rt.spawn<Holder>());
      rt.send(refs.back(), Fill{heap_mib * (1u << 20) / 8});
    }
    rt.wait_idle();
    for (int i = 0; i < reactors; ++i) {
      rt.snapshot(refs[static_cast<std::size_t>(i)], work / name("r", i));
    }
    std::printf("%d reactors of %zu MiB on 2 workers, %d repetitions\n", reactors, heap_mib, reps);
    std::vector<double> full, increment, barrier;
    const auto engine = std::make_shared<reheap::SimulatedCheckpoint>();
    for (int r = 0; r < reps; ++r) {
      auto t0 = Clock::now();
      rt.snapshot(refs[0], work / "full.snap");
      full.push_back(ms(Clock::now() - t0));
      rt.send(refs[0], Touch{512 * 100 / 8, static_cast<std::uint64_t>(r)});  // one page in 100
      rt.wait_idle();
      t0 = Clock::now();
      rt.snapshot_increment(refs[0], work / name("inc", r));
      increment.push_back(ms(Clock::now() - t0));
      const reheap::CheckpointResult c = rt.checkpoint_process(work / "process", {.engine = engine});
      barrier.push_back(ms(c.pause));
      rt.snapshot(refs[0], work / "full.snap");  // the increment after a checkpoint is full: reset
    }
    report("reactor full", full);
    report("reactor increment", increment);
    report("process barrier", barrier);
  }
  std::filesystem::remove_all(work);
  return 0;
}
