// replay_main_if_asked: a program replays a crash bundle in place of its usual work when
// `reheap-snap replay` starts it so (see replay.h). The program is the one whose reactor types
// the bundle's heap needs; reheap-snap has none of them, which is why it asks the program.
//
// The protocol with reheap-snap: REHEAP_REPLAY names the bundle; REHEAP_REPLAY_REPORT, if set,
// names a file this writes "replaying" to first and the exit status last, so that reheap-snap can
// tell a program that replayed (and how it ended) from one that ignored the request and ran as
// usual (it does not call this function). Before the event whose recording failed, it writes
// "delivering failing event N": a failure recorded as a fatal signal (recording.h) recurs as that
// signal and ends the process before the status line.
//
// The statuses: 0 the replay ran to its end without a failure, 1 the recorded failure recurred,
// 2 a divergence, 3 an error, 4 an incomplete bundle (its log does not reach the failing event its
// manifest names, or does not mark it failed: RecordingErrc::kIncomplete), which must never pass
// for a fixed program.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "reheap/heap_scope.h"
#include "reheap/recording_log.h"
#include "reheap/testing/replay.h"

namespace reheap::testing {
namespace {

// Appends `line` to the report file reheap-snap created. Only a regular file is written: a FIFO
// under that name would block the open (O_NONBLOCK makes it fail instead) and a device is not
// ours to write.
void report(const char* file, const std::string& line) {
  if (file == nullptr || *file == '\0') return;
  const int fd = ::open(file, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
  if (fd < 0) return;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const std::string text = line + '\n';
    // One write: O_APPEND puts a line of this size in one piece.
    [[maybe_unused]] const ssize_t written = ::write(fd, text.data(), text.size());
  }
  ::close(fd);
}

}  // namespace

std::optional<int> replay_main_if_asked(int argc, char** argv) {
  const char* bundle = std::getenv("REHEAP_REPLAY");
  if (bundle == nullptr || *bundle == '\0') return std::nullopt;
  const char* report_file = std::getenv("REHEAP_REPLAY_REPORT");
  report(report_file, "replaying");
  const char* program = argc > 0 ? argv[0] : "this program";
  const HeapScope system(nullptr);
  int status = 0;
  // Warnings come from open() and, for departures from the recorded chunks, from the run too.
  std::optional<Replay> replay;
  std::size_t warned = 0;
  const auto warn = [&] {
    for (; replay && warned < replay->warnings().size(); ++warned) {
      std::printf("warning: %s\n", replay->warnings()[warned].c_str());
    }
  };
  try {
    replay.emplace(Replay::open(bundle));
    std::printf("%s: replaying %s: reactor %llu, events %llu to %llu, recorded by build %s (this is build %s)\n",
                program, bundle, static_cast<unsigned long long>(replay->reactor_ref().value()),
                static_cast<unsigned long long>(replay->anchor_events() + 1),
                static_cast<unsigned long long>(replay->recorded_events()),
                replay->recorded_by_build().empty() ? "(none)" : replay->recorded_by_build().c_str(),
                program_build_id().empty() ? "(none)" : program_build_id().c_str());
    warn();
    if (const std::optional<std::uint64_t> failing = replay->failing_event()) {
      replay->run_to(*failing - 1);
      // A failure recorded as a fatal signal ends this process too when it recurs, with no
      // status line: the report says which event was under way (reheap-snap reads it).
      report(report_file, "delivering failing event " + std::to_string(*failing));
      std::fflush(stdout);
    }
    replay->run();
    warn();
    std::printf("replayed to event %llu without a failure%s\n", static_cast<unsigned long long>(replay->position()),
                replay->failing_event() ? " (the recorded failure did not recur)" : "");
  } catch (const ReplayedFailure& f) {
    warn();
    std::printf("event %llu failed in %s: %s\n  (recorded: %s: %s)\n", static_cast<unsigned long long>(f.event()),
                f.hook().c_str(), f.exception().c_str(), f.recorded_hook().c_str(), f.recorded_what().c_str());
    status = 1;
  } catch (const Divergence& d) {
    warn();
    std::printf("%s\n", d.what());
    status = 2;
  } catch (const RecordingError& e) {
    warn();
    std::printf("error: %s\n", e.what());
    status = e.code() == RecordingErrc::kIncomplete ? 4 : 3;
  } catch (const std::exception& e) {
    warn();
    std::printf("error: %s\n", e.what());
    status = 3;
  }
  std::fflush(stdout);
  report(report_file, "status " + std::to_string(status));
  return status;
}

}  // namespace reheap::testing
