// A crash bundle replayed in another process: `reheap-snap replay` runs a program that can replay
// it (tests/testing/program/replay_program.cpp) - the one given with --program, or the one the
// manifest names only when its build id is the bundle's - says clearly when the program cannot
// replay, refuses a bundle cut short before its failure (exit 6) and anything under a bundle's
// names that is not a regular file, and ends within --timeout with whatever the program started.
// Every run is bounded in time and memory by the test (bounded_process.h).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <string>
#include <thread>

#include "bundle_kit.h"
#include "replay_support.h"

namespace replay_test {
namespace {

namespace fs = std::filesystem;

#if defined(REHEAP_SNAP_PATH) && defined(REHEAP_REPLAY_PROGRAM) && defined(REHEAP_REPLAY_PROGRAM_REBUILT)

constexpr int kFailureRecurred = 1;
constexpr int kError = 3;
constexpr int kIncomplete = 6;

// A shell script at `file` that claims a replay without one: it writes what a replaying program
// writes to its report, marks `trace`, and exits 0 as a passing replay would.
void write_fake_program(const fs::path& file, const fs::path& trace) {
  std::ofstream(file) << "#!/bin/sh\necho fake ran >> " << trace.string()
                      << "\nprintf 'replaying\\nstatus 0\\n' >> \"$REHEAP_REPLAY_REPORT\"\necho 'replayed without a failure'\n";
  fs::permissions(file, fs::perms::owner_all);
}

bool ended_in_bounds(const BoundedRun& run) { return !run.timed_out && !run.over_memory; }

TEST(ReplayInAnotherProcess, ReheapSnapReplayRunsTheRecordingProgramAndShowsTheFailure) {
  TempDir dir;
  const fs::path bundle = record_bundle(dir.path());
  ASSERT_FALSE(bundle.empty());

  // The manifest names the program, whose build is the bundle's: no --program needed, and the
  // tool says what it runs and why. The recorded failure recurs: status 1.
  const BoundedRun replayed = snap_replay(bundle);
  EXPECT_EQ(replayed.exit_code, kFailureRecurred) << replayed.out;
  EXPECT_NE(replayed.out.find(std::string("reheap-snap: running ") + REHEAP_REPLAY_PROGRAM +
                              " (the program manifest.json names, and its build id "),
            std::string::npos)
      << replayed.out;
  EXPECT_NE(replayed.out.find("events 1 to 5"), std::string::npos) << replayed.out;
  EXPECT_NE(replayed.out.find("event 5 failed in on_message: order 0 is not allowed"), std::string::npos)
      << replayed.out;
  // A new process is laid out anew (ASLR) and the heap relocated; the digests name program pointers
  // by symbol, so they are compared all the same.
  EXPECT_EQ(replayed.out.find("state digests are not compared"), std::string::npos) << replayed.out;
  EXPECT_EQ(replayed.out.find("LayoutCheck"), std::string::npos) << replayed.out;
}

TEST(ReplayInAnotherProcess, AProgramThatDoesNotCallReplayMainIfAskedIsNamedAsSuch) {
  TempDir dir;
  const fs::path bundle = record_bundle(dir.path());
  ASSERT_FALSE(bundle.empty());
  const BoundedRun replayed = snap_replay(bundle, {"--program", "/bin/true"});
  EXPECT_EQ(replayed.exit_code, kError) << replayed.out;
  EXPECT_NE(replayed.out.find("/bin/true does not support replay: it exited (exit status 0) without replaying "
                              "the bundle"),
            std::string::npos)
      << replayed.out;
  EXPECT_NE(replayed.out.find("replay_main_if_asked(argc, argv)"), std::string::npos) << replayed.out;

  const BoundedRun not_a_bundle = snap_replay(dir.path());
  EXPECT_EQ(not_a_bundle.exit_code, kError) << not_a_bundle.out;
  EXPECT_NE(not_a_bundle.out.find("not a crash bundle (no manifest.json)"), std::string::npos) << not_a_bundle.out;
}

TEST(ReplayInAnotherProcess, JsonIsAUsageErrorForReplay) {
  TempDir dir;
  const BoundedRun replayed = snap_replay(dir.path(), {"--json"});
  EXPECT_EQ(replayed.exit_code, 2) << replayed.out;
  EXPECT_NE(replayed.out.find("--json does not apply to replay"), std::string::npos) << replayed.out;
}

TEST(ReplayInAnotherProcess, AFailureRecordedAsAFatalSignalRecursAsOne) {
  TempDir dir;
  const fs::path bundle = record_bundle(dir.path(), 0, {"REPLAY_PROGRAM_SEGV=1"});
  ASSERT_FALSE(bundle.empty());
  const BoundedRun replayed = snap_replay(bundle, {}, {"REPLAY_PROGRAM_SEGV=1"});
  EXPECT_EQ(replayed.exit_code, kFailureRecurred) << replayed.out;
  EXPECT_NE(replayed.out.find("events 1 to 5"), std::string::npos) << replayed.out;
  EXPECT_NE(replayed.out.find("event 5 ended the replaying program ("), std::string::npos) << replayed.out;
  EXPECT_NE(replayed.out.find("recorded: on_message: fatal signal SIGSEGV (segmentation fault"), std::string::npos)
      << replayed.out;
}

// A bundle from elsewhere names whatever it likes as its program: a script that fakes a passing
// replay, another build. Neither runs; the refusal says why and what to give instead.
TEST(ReplayProgramChoice, TheProgramAManifestNamesRunsOnlyWhenItsBuildIdIsTheBundles) {
  TempDir dir;
  const fs::path bundle = record_bundle(dir.path());
  ASSERT_FALSE(bundle.empty());
  const fs::path trace = dir.path() / "trace";
  const fs::path fake = dir.path() / "fake-replay";
  write_fake_program(fake, trace);
  const std::string manifest = (bundle / "manifest.json").string();

  ASSERT_TRUE(replace_in(manifest, REHEAP_REPLAY_PROGRAM, fake.string()));
  const BoundedRun script = snap_replay(bundle, {}, {"REPLAY_PROGRAM_TRACE=" + trace.string()});
  EXPECT_EQ(script.exit_code, kError) << script.out;
  EXPECT_FALSE(fs::exists(trace)) << "the script the manifest names ran:\n" << script.out;
  EXPECT_NE(script.out.find(manifest + " names the program " + fake.string() +
                            ", which is not run: not an ELF executable"),
            std::string::npos)
      << script.out;
  EXPECT_NE(script.out.find("give the recording program, or a rebuild of it, with --program PATH"), std::string::npos)
      << script.out;

  ASSERT_TRUE(replace_in(manifest, fake.string(), REHEAP_REPLAY_PROGRAM_REBUILT));
  const BoundedRun rebuilt = snap_replay(bundle, {}, {"REPLAY_PROGRAM_TRACE=" + trace.string()});
  EXPECT_EQ(rebuilt.exit_code, kError) << rebuilt.out;
  EXPECT_FALSE(fs::exists(trace)) << "another build the manifest names ran:\n" << rebuilt.out;
  EXPECT_NE(rebuilt.out.find("which is not run: its build id is "), std::string::npos) << rebuilt.out;

  ASSERT_TRUE(replace_in(manifest, REHEAP_REPLAY_PROGRAM_REBUILT, "replay_program"));
  const BoundedRun relative = snap_replay(bundle);
  EXPECT_EQ(relative.exit_code, kError) << relative.out;
  EXPECT_NE(relative.out.find("which is not run: it is not an absolute path"), std::string::npos) << relative.out;
}

// What the user names runs as given - another build, a script - and the tool says which build it
// is; only the manifest's choice is held to the bundle's build.
TEST(ReplayProgramChoice, AProgramGivenWithProgramRunsAndTheToolSaysItsBuild) {
  TempDir dir;
  const fs::path bundle = record_bundle(dir.path());
  ASSERT_FALSE(bundle.empty());
  const fs::path trace = dir.path() / "trace";
  const BoundedRun rebuilt = snap_replay(bundle, {"--program", REHEAP_REPLAY_PROGRAM_REBUILT},
                                         {"REPLAY_PROGRAM_TRACE=" + trace.string()});
  EXPECT_EQ(rebuilt.exit_code, kFailureRecurred) << rebuilt.out;
  EXPECT_EQ(read_bytes(trace), "rebuilt ran\n");
  EXPECT_NE(rebuilt.out.find(std::string("reheap-snap: running ") + REHEAP_REPLAY_PROGRAM_REBUILT +
                             " (given with --program; build "),
            std::string::npos)
      << rebuilt.out;
  EXPECT_NE(rebuilt.out.find(", while the bundle was recorded by build "), std::string::npos) << rebuilt.out;

  const fs::path fake = dir.path() / "fake-replay";
  write_fake_program(fake, trace);
  const BoundedRun script = snap_replay(bundle, {"--program", fake.string()});
  EXPECT_NE(script.out.find("(given with --program; not an ELF executable"), std::string::npos) << script.out;
}

// Anything but a regular file under a bundle's names is refused by its type, naming it, without
// blocking (a FIFO) or reading without end (/dev/zero).
TEST(ReplayBundleFiles, AFifoOrADevZeroLinkUnderABundlesNameIsRefusedWithinBounds) {
  TempDir dir;
  const fs::path recorded = record_bundle(dir.path());
  ASSERT_FALSE(recorded.empty());
  const std::string log_name = log_of(recorded).filename().string();
  const Bounds bounds{std::chrono::milliseconds(15000), std::uint64_t{512} << 20};
  struct Case {
    std::string file;
    bool fifo;
  };
  int n = 0;
  for (const Case& c : {Case{"manifest.json", true}, Case{"manifest.json", false}, Case{log_name, true},
                        Case{log_name, false}, Case{"base-0.snap", true}, Case{"base-0.snap", false}}) {
    const fs::path bundle = dir.path() / ("bundle-" + std::to_string(n++));
    copy_bundle(recorded, bundle);
    fs::remove(bundle / c.file);
    if (c.fifo) {
      ASSERT_EQ(::mkfifo((bundle / c.file).c_str(), 0600), 0);
    } else {
      fs::create_symlink("/dev/zero", bundle / c.file);
    }
    SCOPED_TRACE(c.file + (c.fifo ? " as a FIFO" : " linked to /dev/zero"));
    const BoundedRun run = snap_replay(bundle, {"--timeout", "10"}, {}, bounds);
    EXPECT_TRUE(ended_in_bounds(run)) << "timed out " << run.timed_out << ", over memory " << run.over_memory << ":\n"
                                      << run.out;
    EXPECT_EQ(run.exit_code, kError) << run.out;
    EXPECT_NE(run.out.find((bundle / c.file).string() + ": is a " + (c.fifo ? "FIFO" : "character device") +
                           ", not a regular file"),
              std::string::npos)
        << run.out;
  }
}

// Each error names the file and what is wrong with it, never a library's bare word.
TEST(ReplayBundleFiles, ErrorsNameTheFileAndTheProblem) {
  TempDir dir;
  const fs::path recorded = record_bundle(dir.path());
  ASSERT_FALSE(recorded.empty());
  struct Case {
    std::string from, to, expected;
  };
  const std::vector<Case> cases = {
      {"\"failing_event\": 5", "\"failing_event\": 99999999999999999999999",
       "manifest.json: the crash bundle manifest's \"failing_event\" is 99999999999999999999999, more than 64 bits "
       "hold"},
      {"\"hook\": \"on_message\"", "\"hook\": \"on_\\u12x4message\"",
       "manifest.json: malformed crash bundle manifest at byte "},
      {"\"anchor\": \"base-0.snap\"", "\"anchor\": \"../../base-0.snap\"",
       "manifest.json: the crash bundle manifest's \"anchor\" is \"../../base-0.snap\", not the name of a file in "
       "the bundle"},
  };
  int n = 0;
  for (const Case& c : cases) {
    const fs::path bundle = dir.path() / ("bundle-" + std::to_string(n++));
    copy_bundle(recorded, bundle);
    ASSERT_TRUE(replace_in(bundle / "manifest.json", c.from, c.to)) << c.from;
    const BoundedRun run = snap_replay(bundle);
    EXPECT_EQ(run.exit_code, kError) << run.out;
    EXPECT_NE(run.out.find(c.expected), std::string::npos) << run.out;
    EXPECT_EQ(run.out.find("stoull"), std::string::npos) << run.out;
    EXPECT_EQ(run.out.find("stoi"), std::string::npos) << run.out;
  }
  const fs::path bundle = dir.path() / "directory-manifest";
  copy_bundle(recorded, bundle);
  fs::remove(bundle / "manifest.json");
  fs::create_directory(bundle / "manifest.json");
  const BoundedRun run = snap_replay(bundle);
  EXPECT_EQ(run.exit_code, kError) << run.out;
  EXPECT_NE(run.out.find((bundle / "manifest.json").string() + ": is a directory, not a regular file"),
            std::string::npos)
      << run.out;
  EXPECT_EQ(run.out.find("basic_filebuf"), std::string::npos) << run.out;
}

// A bundle whose log ends before its failing event - at any block boundary, after its header
// alone, or inside a block - is incomplete (exit 6), even for a fixed program that would replay
// it "without a failure"; the whole bundle passes that program (exit 0).
TEST(ReplayIncompleteBundle, ABundleCutAtAnyBlockBoundaryOrInsideABlockIsIncompleteNeverAPass) {
  TempDir dir;
  const fs::path recorded = record_bundle(dir.path(), 16);
  ASSERT_FALSE(recorded.empty());
  const std::string log = read_bytes(log_of(recorded));
  const std::vector<std::size_t> ends = block_ends(log);
  ASSERT_GE(ends.size(), 6u) << "the log should hold several blocks";
  ASSERT_EQ(ends.back(), log.size());
  const std::vector<std::string> fixed = {"REPLAY_PROGRAM_FIXED=1"};

  const BoundedRun whole = snap_replay(recorded, {}, fixed);
  EXPECT_EQ(whole.exit_code, 0) << whole.out;

  std::vector<std::size_t> cuts(ends.begin(), ends.end() - 1);  // every boundary, the header's first
  for (std::size_t i = 0; i + 1 < ends.size(); ++i) cuts.push_back(ends[i] + 10);              // a torn block header
  for (std::size_t i = 0; i + 1 < ends.size(); ++i) cuts.push_back((ends[i] + ends[i + 1]) / 2);  // half a block
  cuts.push_back(log.size() - 1);
  int n = 0;
  for (const std::size_t cut : cuts) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut) + " of " + std::to_string(log.size()));
    const fs::path bundle = dir.path() / ("cut-" + std::to_string(n++));
    copy_bundle(recorded, bundle);
    write_bytes(log_of(bundle), log.substr(0, cut));
    const BoundedRun run = snap_replay(bundle, {}, fixed);
    EXPECT_EQ(run.exit_code, kIncomplete) << run.out;
    EXPECT_NE(run.out.find("the failing event 21"), std::string::npos) << run.out;
    EXPECT_EQ(run.out.find("reheap-snap: running"), std::string::npos) << "a program ran:\n" << run.out;
  }
}

TEST(ReplayIncompleteBundle, AFailingEventTheLogDoesNotReachOrMarkFailedIsIncomplete) {
  TempDir dir;
  const fs::path recorded = record_bundle(dir.path());
  ASSERT_FALSE(recorded.empty());
  struct Case {
    std::string failing, expected;
  };
  int n = 0;
  for (const Case& c : {Case{"4", "the log does not mark event 4, the failing event the manifest names, as failed"},
                        Case{"6", "the log ends at event 5, before the failing event 6 the manifest names"},
                        Case{"1000", "the log ends at event 5, before the failing event 1000"}}) {
    const fs::path bundle = dir.path() / ("bundle-" + std::to_string(n++));
    copy_bundle(recorded, bundle);
    ASSERT_TRUE(replace_in(bundle / "manifest.json", "\"failing_event\": 5", "\"failing_event\": " + c.failing));
    const BoundedRun run = snap_replay(bundle, {}, {"REPLAY_PROGRAM_FIXED=1"});
    EXPECT_EQ(run.exit_code, kIncomplete) << run.out;
    EXPECT_NE(run.out.find(c.expected), std::string::npos) << run.out;
  }
}

// The process a program started, while it ran past --timeout, is stopped with it.
TEST(ReplayTimeout, TheTimeoutStopsTheProgramAndWhatItStarted) {
  TempDir dir;
  const fs::path bundle = record_bundle(dir.path());
  ASSERT_FALSE(bundle.empty());
  const fs::path pid_file = dir.path() / "started";
  const fs::path slow = dir.path() / "slow-replay";
  std::ofstream(slow) << "#!/bin/sh\nsleep 600 &\necho $! > " << pid_file.string()
                      << "\nprintf 'replaying\\n' >> \"$REHEAP_REPLAY_REPORT\"\nwait\n";
  fs::permissions(slow, fs::perms::owner_all);
  const BoundedRun run = snap_replay(bundle, {"--program", slow.string(), "--timeout", "1"});
  EXPECT_FALSE(run.timed_out) << run.out;
  EXPECT_LT(run.elapsed, std::chrono::milliseconds(8000)) << run.out;
  EXPECT_EQ(run.exit_code, kError) << run.out;
  EXPECT_NE(run.out.find("did not finish the replay within 1 s (--timeout; stopped)"), std::string::npos) << run.out;
  const pid_t started = static_cast<pid_t>(std::stol(read_bytes(pid_file)));
  // Killed: gone, or a zombie until whoever inherited it reaps it.
  bool stopped = false;
  for (int i = 0; i < 200 && !stopped; ++i) {
    const std::string stat = read_bytes("/proc/" + std::to_string(started) + "/stat");
    const std::size_t paren = stat.rfind(')');
    stopped = stat.empty() || (paren != std::string::npos && stat.substr(paren + 2, 1) == "Z");
    if (!stopped) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!stopped) ::kill(started, SIGKILL);  // not left behind by this test either
  EXPECT_TRUE(stopped) << "the program's child " << started << " outlived the timeout";
}

#endif

}  // namespace
}  // namespace replay_test
