// A service restarted again and again, each start a new process of the same node with the same
// state directory, spawns its reactors first and then restores the one it saved: Runtime::restore
// finds the saved heap's chunks free at every start, the eighth after its creation (whose
// placement window is the creating start's) included.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap::restart_restore_test {
namespace {

using rttest::Log;
using rttest::TempDir;

struct Add {
  std::uint64_t n;
};
struct Ask {
  ActorRef reply_to;
};
struct Count {
  std::uint64_t adds;
  std::uint64_t bytes;
};

// Keeps a journal in its heap; one Add grows it by n strings.
class Journal : public Reactor {
 public:
  Journal() {
    handle<&Journal::on_add>();
    handle<&Journal::on_ask>();
  }
  void on_add(const Add& a) {
    for (std::uint64_t i = 0; i < a.n; ++i) lines_.push_back(std::string(100 + i % 400, 'j'));
    ++adds_;
  }
  void on_ask(const Ask& a) {
    std::uint64_t bytes = 0;
    for (const std::string& line : lines_) bytes += line.size();
    send(a.reply_to, Count{adds_, bytes});
  }

 private:
  std::vector<std::string> lines_;
  std::uint64_t adds_ = 0;
};

class Collector : public Reactor {
 public:
  explicit Collector(Log<Count>* log) : log_(log) { handle<&Collector::on_count>(); }
  void on_count(const Count& c) { log_->add(c); }

 private:
  Log<Count>* log_;
};

// --helper restart-service <state dir> <file> <spawned> <start>
// One start of the service: a runtime of node 6 keeping its state in <state dir> spawns
// <spawned> Journals and grows them, then restores the service's Journal from <file> if an earlier
// start saved it (else spawns it), checks it holds the <start> earlier starts' adds, adds one and
// snapshots it to <file>. Exits 3 if the restore failed with kRangeInUse.
int restart_service(const std::vector<std::string>& args) {
  if (args.size() != 4) {
    std::fprintf(stderr, "usage: <state dir> <file> <spawned> <start>\n");
    return 2;
  }
  const std::filesystem::path file = args[1];
  const int spawned = std::stoi(args[2]);
  const std::uint64_t start = std::stoull(args[3]);
  Runtime rt(RuntimeConfig{.workers = 1, .node = 6, .state_dir = args[0]});
  std::vector<ActorRef> others;
  for (int i = 0; i < spawned; ++i) {
    others.push_back(rt.spawn<Journal>());
    rt.send(others.back(), Add{2000});  // about 600 KB: beyond the first class lanes
  }
  if (!rt.wait_idle()) return 1;
  ActorRef journal;
  if (std::filesystem::exists(file)) {
    try {
      journal = rt.restore(file);
    } catch (const SnapshotError& e) {
      std::printf("collision at incarnation %u: %s\n", rt.identity().incarnation, e.what());
      return e.code() == SnapshotErrc::kRangeInUse ? 3 : 1;
    }
  } else {
    journal = rt.spawn<Journal>();
  }
  Log<Count> log;
  const ActorRef collector = rt.spawn<Collector>(&log);
  rt.send(journal, Add{300});
  rt.send(journal, Ask{collector});
  if (!log.wait_size(1)) return 1;
  if (log.items()[0].adds != start + 1) {
    std::printf("the restored journal holds %llu adds, not %llu\n",
                static_cast<unsigned long long>(log.items()[0].adds), static_cast<unsigned long long>(start + 1));
    return 1;
  }
  rt.snapshot(journal, file);
  rt.shutdown();
  return 0;
}
const rttest::RegisterHelper kRestartService("restart-service", &restart_service);

TEST(RestartedService, RestoresItsSnapshotAfterSpawningReactorsAtEveryStart) {
  REQUIRE_ASLR_OFF(rttest::aslr_state().off, rttest::aslr_state().why);
  TempDir dir;
  const std::string state = (dir / "state").string();
  const std::string file = (dir / "journal.snap").string();
  for (int start = 0; start < 10; ++start) {
    const rttest::ChildResult r = rttest::run_helper(
        "restart-service", {state, file, std::to_string(2 + start % 7), std::to_string(start)});
    ASSERT_TRUE(r.succeeded()) << "start " << start << ": " << r.describe();
  }
}

}  // namespace
}  // namespace reheap::restart_restore_test
