// Hundreds of damaged crash bundles through `reheap-snap replay`, each run bounded by the test in
// time and memory (bounded_process.h): none may hang, none may read without bound, and none whose
// log does not reach its failing event may pass (exit 0).
//
// The bundles are real: recorded by tests/testing/program/replay_program.cpp with enough events
// for many log blocks, then damaged one way each - the log cut at every block boundary and inside
// every block, bytes of the log flipped, the manifest cut at every few bytes and its fields
// changed one by one, files replaced by FIFOs, directories, links to /dev/zero and huge sparse
// files, another recording's log or anchor, and programs that exit 0 without replaying, claim a
// pass without one, are another build, or flood their report. Every replay runs the fixed build
// of the program (REPLAY_PROGRAM_FIXED=1), which replays a whole bundle without the failure and
// exits 0: exactly the program that must not make a cut bundle pass. The counts are printed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "bundle_kit.h"
#include "replay_support.h"

namespace replay_test {
namespace {

namespace fs = std::filesystem;

#if defined(REHEAP_SNAP_PATH) && defined(REHEAP_REPLAY_PROGRAM) && defined(REHEAP_REPLAY_PROGRAM_REBUILT)

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// A sanitizer's shadow grows with what the program reads: ASan's quarantine, TSan's 4x shadow of
// every byte a log holds.
constexpr std::uint64_t kBaseRss = std::uint64_t{1} << 30;
#else
constexpr std::uint64_t kBaseRss = std::uint64_t{256} << 20;
#endif

struct Mutant {
  std::string name;
  std::function<void(const fs::path& bundle)> damage;  // applied to a fresh copy of the bundle
  bool complete = false;   // the log still reaches its failing event and marks it: 0 may be right
  std::set<int> expected;  // the exit codes it may give; empty: any but 0
  std::vector<std::string> args = {};
  bool from_other = false;  // copy the other recording's bundle instead
};

struct Tally {
  int runs = 0;
  int hangs = 0;
  int unbounded = 0;
  int passed_incomplete = 0;
  int unexpected = 0;
  int programs_run = 0;
  std::uint64_t max_rss = 0;
  std::chrono::milliseconds slowest{0};
};

// The bytes the bundle's regular files really hold (sparse holes do not count): reading them all
// is the most a replay may hold in memory besides its own.
std::uint64_t allocated_bytes(const fs::path& bundle) {
  std::uint64_t total = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(bundle)) {
    struct stat st {};
    if (::stat(entry.path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      total += static_cast<std::uint64_t>(st.st_blocks) * 512;
    }
  }
  return total;
}

// Replaces `name` in the bundle with what `make` puts there.
std::function<void(const fs::path&)> replace_file(const std::string& name, std::function<void(const fs::path&)> make) {
  return [name, make](const fs::path& bundle) {
    fs::remove_all(bundle / name);
    make(bundle / name);
  };
}

void make_fifo(const fs::path& file) { ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0) << file; }
void make_directory(const fs::path& file) { fs::create_directory(file); }
void make_dev_zero(const fs::path& file) { fs::create_symlink("/dev/zero", file); }
void make_dangling(const fs::path& file) { fs::create_symlink(file.parent_path() / "nowhere", file); }
void make_loop(const fs::path& file) { fs::create_symlink(file.filename(), file); }
std::function<void(const fs::path&)> make_sparse(std::uint64_t bytes, std::string head = {}) {
  return [bytes, head](const fs::path& file) {
    write_bytes(file, head);
    fs::resize_file(file, bytes);
  };
}
std::function<void(const fs::path&)> make_text(std::string text) {
  return [text](const fs::path& file) { write_bytes(file, text); };
}

// A shell script at `file` running `body`, executable.
void write_script(const fs::path& file, const std::string& body) {
  write_bytes(file, "#!/bin/sh\n" + body);
  fs::permissions(file, fs::perms::owner_all);
}

TEST(ReplayMutatedBundles, NoneHangsReadsWithoutBoundOrPassesWithoutReachingItsFailure) {
  TempDir dir;
  fs::create_directories(dir.path() / "base");
  fs::create_directories(dir.path() / "other");
  // 32 notes of 24 KiB: the log spans a dozen 64 KiB blocks; the failing event is 37.
  const fs::path base = record_bundle(dir.path() / "base", 32);
  const fs::path other = record_bundle(dir.path() / "other", 0);
  ASSERT_FALSE(base.empty());
  ASSERT_FALSE(other.empty());
  const std::string log_name = log_of(base).filename().string();
  const std::string log = read_bytes(log_of(base));
  const std::string manifest = read_bytes(base / "manifest.json");
  const std::vector<std::size_t> ends = block_ends(log);
  ASSERT_GE(ends.size(), 12u);
  ASSERT_EQ(ends.back(), log.size());
  const std::size_t header = ends.front();

  const fs::path tools = dir.path() / "tools";
  fs::create_directories(tools);
  const fs::path fake = tools / "claims-a-pass";
  write_script(fake, "printf 'replaying\\nstatus 0\\n' >> \"$REHEAP_REPLAY_REPORT\"\n");
  const fs::path flood = tools / "floods-its-report";
  write_script(flood, "printf 'replaying\\n' >> \"$REHEAP_REPLAY_REPORT\"\n"
                      "head -c 4000000 /dev/zero | tr '\\0' x >> \"$REHEAP_REPLAY_REPORT\"\n"
                      "printf '\\nstatus 0\\n' >> \"$REHEAP_REPLAY_REPORT\"\n");
  const fs::path odd = tools / "odd-status";
  write_script(odd, "printf 'replaying\\nstatus 7\\n' >> \"$REHEAP_REPLAY_REPORT\"\n");
  const fs::path swaps = tools / "swaps-its-report";
  write_script(swaps, "rm -f \"$REHEAP_REPLAY_REPORT\"; mkfifo \"$REHEAP_REPLAY_REPORT\"\n");
  const fs::path fifo_program = tools / "fifo";
  make_fifo(fifo_program);

  std::vector<Mutant> mutants;
  const auto add = [&](Mutant m) { mutants.push_back(std::move(m)); };
  const auto cut_log = [&](std::size_t at) {
    return [&, at](const fs::path& bundle) { write_bytes(bundle / log_name, log.substr(0, at)); };
  };

  // ---- The log cut: at every block boundary (the header's end first) and inside every block,
  // each run by the manifest's (fixed) program and by a script that claims a pass. ----
  std::vector<std::size_t> cuts = {0, 4, 8, 12, 20, header - 1};
  for (std::size_t i = 0; i + 1 < ends.size(); ++i) {
    const std::size_t next = ends[i + 1];
    for (const std::size_t at : {ends[i], ends[i] + 1, ends[i] + 10, ends[i] + 28, (ends[i] + next) / 2, next - 1}) {
      cuts.push_back(at);
    }
  }
  for (const std::size_t at : cuts) {
    const std::set<int> codes = at >= header ? std::set<int>{6} : std::set<int>{3, 6};
    add({"log cut at byte " + std::to_string(at), cut_log(at), false, codes});
    add({"log cut at byte " + std::to_string(at) + ", a program claiming a pass", cut_log(at), false, codes,
         {"--program", fake.string()}});
  }
  // ---- Bytes of the log flipped: a checksum or a structure breaks. ----
  for (std::size_t at = 3; at < log.size(); at += log.size() / 40) {
    add({"log byte " + std::to_string(at) + " flipped",
         [&, at](const fs::path& bundle) {
           std::string damaged = log;
           damaged[at] = static_cast<char>(damaged[at] ^ 0x5a);
           write_bytes(bundle / log_name, damaged);
         },
         false, {3}});
  }
  // ---- The manifest cut every few bytes: malformed, but for the final newline. ----
  const std::size_t closing = manifest.rfind('}');
  for (std::size_t at = 0; at < manifest.size(); at += 7) {
    const bool whole = at > closing;
    add({"manifest cut at byte " + std::to_string(at),
         replace_file("manifest.json", make_text(manifest.substr(0, at))), whole,
         whole ? std::set<int>{0} : std::set<int>{3}});
  }
  // ---- The manifest's fields changed, one at a time. ----
  struct Edit {
    std::string from, to;
    bool complete;
    std::set<int> codes;
  };
  const std::string failing = "\"failing_event\": 37";
  const std::string anchor = "\"anchor\": \"base-0.snap\"";
  const std::string hook = "\"hook\": \"on_message\"";
  const std::string program_field = std::string("\"program\": \"") + REHEAP_REPLAY_PROGRAM + "\"";
  const std::string build_field = "\"build_id\": \"";
  std::vector<Edit> edits = {
      {failing, "\"failing_event\": 0", false, {3}},
      {failing, "\"failing_event\": 38", false, {6}},
      {failing, "\"failing_event\": 100", false, {6}},
      {failing, "\"failing_event\": 9223372036854775808", false, {6}},
      {failing, "\"failing_event\": 18446744073709551615", false, {6}},
      {failing, "\"failing_event\": 18446744073709551616", false, {3}},
      {failing, "\"failing_event\": 99999999999999999999999", false, {3}},
      {failing, "\"failing_event\": \"37\"", false, {3}},
      {failing, "\"failing_event\": -37", false, {3}},
      {failing, "\"failing_event\": 37.0", false, {3}},
      {failing, "\"failing_event\": 3.7e1", false, {3}},
      {failing, "\"failing_event\": null", false, {3}},
      {failing, "\"failing_event\": true", false, {3}},
      {failing, "\"failing_event\": [37]", false, {3}},
      {failing, "\"failing_event\": {}", false, {3}},
      {failing, "\"failing_evnt\": 37", false, {3}},
      {failing, "\"failing_event\": 037", true, {0}},
      {"\"format\": \"reheap-crash-bundle\"", "\"format\": \"reheap-crash-bundl\"", false, {3}},
      {"\"format\": \"reheap-crash-bundle\"", "\"format\": 1", false, {3}},
      {"\"format\": \"reheap-crash-bundle\"", "\"formats\": \"reheap-crash-bundle\"", false, {3}},
      {"\"version\": 1", "\"version\": 2", false, {3}},
      {"\"version\": 1", "\"version\": 0", false, {3}},
      {"\"version\": 1", "\"version\": \"1\"", false, {3}},
      {"\"version\": 1", "\"versions\": 1", false, {3}},
      {build_field, build_field + "00", false, {3}},
      {build_field, "\"build_id\": \"\", \"old_build_id\": \"", true, {0}},
      {build_field, build_field + "ZZ", false, {3}},
      {program_field, "\"program\": \"\"", false, {2}},
      {program_field, "\"program\": \"/bin/true\"", false, {3}},
      {program_field, "\"program\": \"replay_program\"", false, {3}},
      {program_field, "\"program\": \"" + fake.string() + "\"", false, {3}},
      {program_field, "\"program\": \"" + flood.string() + "\"", false, {3}},
      {program_field, std::string("\"program\": \"") + REHEAP_REPLAY_PROGRAM_REBUILT + "\"", false, {3}},
      {program_field, "\"program\": \"/nonexistent/replay_program\"", false, {3}},
      {program_field, "\"program\": \"/\"", false, {3}},
      {program_field, "\"program\": \"/dev/zero\"", false, {3}},
      {program_field, "\"program\": \"" + fifo_program.string() + "\"", false, {3}},
      {program_field, "\"program\": 5", false, {3}},
      {"\"reactor\": \"", "\"reactor\": \"1", false, {3}},
      {"\"reactor\": \"", "\"reactor\": \"x", false, {3}},
      {"\"recording_id\": \"", "\"recording_id\": \"99999999999999999999999", false, {3}},
      {"\"recording_id\": \"", "\"recording_id\": \"7", false, {3}},
      {anchor, "\"anchor\": \"\"", false, {3}},
      {anchor, "\"anchor\": \".\"", false, {3}},
      {anchor, "\"anchor\": \"..\"", false, {3}},
      {anchor, "\"anchor\": \"../base-0.snap\"", false, {3}},
      {anchor, "\"anchor\": \"/etc/passwd\"", false, {3}},
      {anchor, "\"anchor\": \"base-1.snap\"", false, {3}},
      {anchor, "\"anchor\": \"" + log_name + "\"", false, {3}},
      {anchor, "\"anchor\": \"manifest.json\"", false, {3}},
      {anchor, "\"anchor\": 0", false, {3}},
      {"\"anchor_events\": 0", "\"anchor_events\": 37", false, {3}},
      {"\"anchor_events\": 0", "\"anchor_events\": 99", false, {3}},
      {"\"anchor_events\": 0", "\"anchor_events\": \"0\"", false, {3}},
      {hook, "\"hook\": \"on_timer\"", true, {0}},
      {hook, "\"hook\": \"on_\\u00e9\\ud83d\\ude00\"", true, {0}},
      {hook, "\"hook\": \"on_\\ud83d\"", false, {3}},
      {hook, "\"hook\": \"on_\\ude00\"", false, {3}},
      {hook, "\"hook\": \"on_\\u0000\"", false, {3}},
      {hook, "\"hook\": \"on_\\u12\"", false, {3}},
      {hook, "\"hook\": \"on_\\q\"", false, {3}},
      {hook, "\"hook\": \"on_\tmessage\"", false, {3}},
      {hook, "\"hook\": \"on_\nmessage\"", false, {3}},
      {hook, "\"hook\": \"on_message\", \"hook\": \"on_timer\"", false, {3}},
      {hook, "\"hook\": {\"name\": \"on_message\"}", false, {3}},
      {hook, "\"hook\": \"on_message\", \"extra\": 1", true, {0}},
      {hook, "\"hook\": \"\xff\xfe\"", true, {0}},
      {"\"failure\": \"", "\"failure\": \"" + std::string(100000, 'x'), true, {0}},
      {"\"failure\": \"", "\"failure\": \"" + std::string(1100000, 'x'), false, {3}},
      {"{", "[{", false, {3}},
      {"{", "\xef\xbb\xbf{", false, {3}},
      {"\n}", "\n}}", false, {3}},
      {"\n}", "\n} trailing", false, {3}},
      {"\n}", ",\n}", false, {3}},
  };
  for (const Edit& e : edits) {
    add({"manifest " + e.from + " -> " + e.to.substr(0, 60),
         [&, e](const fs::path& bundle) { ASSERT_TRUE(replace_in(bundle / "manifest.json", e.from, e.to)) << e.from; },
         e.complete, e.codes});
  }
  add({"manifest {}", replace_file("manifest.json", make_text("{}")), false, {3}});
  add({"manifest empty", replace_file("manifest.json", make_text("")), false, {3}});
  add({"manifest null", replace_file("manifest.json", make_text("null")), false, {3}});
  // ---- Files that are not regular files, huge files, missing files. ----
  using Make = std::function<void(const fs::path&)>;
  const std::vector<std::pair<std::string, Make>> kinds = {
      {"a FIFO", make_fifo},           {"a directory", make_directory}, {"a link to /dev/zero", make_dev_zero},
      {"a dangling link", make_dangling}, {"a link to itself", make_loop},
      {"a huge sparse file", make_sparse(std::uint64_t{4} << 30)}};
  for (const std::string& name : {std::string("manifest.json"), log_name, std::string("base-0.snap")}) {
    for (const auto& [what, make] : kinds) add({name + " is " + what, replace_file(name, make), false, {3}});
    add({name + " is missing", [name](const fs::path& bundle) { fs::remove(bundle / name); }, false, {3}});
    add({name + " is empty", replace_file(name, make_text("")), false, {3}});
  }
  add({"the log is its header and a huge sparse tail", replace_file(log_name, make_sparse(std::uint64_t{64} << 20, log.substr(0, header))),
       false, {3, 6}});
  add({"the log is whole with a sparse tail", replace_file(log_name, make_sparse(log.size() + (std::uint64_t{32} << 20), log)),
       false, {3}});
  add({"the anchor is cut", [](const fs::path& bundle) { fs::resize_file(bundle / "base-0.snap", 4096); }, false, {3}});
  add({"the anchor is another recording's",
       [&](const fs::path& bundle) { fs::copy_file(other / "base-0.snap", bundle / "base-0.snap", fs::copy_options::overwrite_existing); },
       false, {3}});
  add({"the log is another recording's",
       [&](const fs::path& bundle) { fs::copy_file(log_of(other), bundle / log_name, fs::copy_options::overwrite_existing); },
       false, {3}});
  add({"a second segment that does not follow", [&](const fs::path& bundle) { write_bytes(bundle / "log-900.rlog", log); },
       false, {3}});
  add({"a segment that is a FIFO", [&](const fs::path& bundle) { make_fifo(bundle / "log-900.rlog"); }, false, {3}});
  add({"the program inside the bundle",
       [&](const fs::path& bundle) {
         fs::copy_file(REHEAP_REPLAY_PROGRAM, bundle / "replay_program");
         ASSERT_TRUE(replace_in(bundle / "manifest.json", program_field,
                                "\"program\": \"" + (bundle / "replay_program").string() + "\""));
       },
       false, {3}});
  add({"the program through a link outside the bundle",
       [&](const fs::path& bundle) {
         const fs::path link = bundle.parent_path() / (bundle.filename().string() + "-program");
         fs::create_symlink(REHEAP_REPLAY_PROGRAM, link);
         ASSERT_TRUE(replace_in(bundle / "manifest.json", program_field, "\"program\": \"" + link.string() + "\""));
       },
       true, {0}});
  // ---- The bundle path itself. ----
  add({"the bundle is a FIFO", [](const fs::path& bundle) { fs::remove_all(bundle); make_fifo(bundle); }, false, {3}});
  add({"the bundle is a file", [](const fs::path& bundle) { fs::remove_all(bundle); write_bytes(bundle, "x"); }, false, {3}});
  add({"the bundle is a link to /dev/zero", [](const fs::path& bundle) { fs::remove_all(bundle); make_dev_zero(bundle); },
       false, {3}});
  add({"the bundle is missing", [](const fs::path& bundle) { fs::remove_all(bundle); }, false, {3}});
  add({"the bundle is empty", [](const fs::path& bundle) { fs::remove_all(bundle); fs::create_directory(bundle); }, false, {3}});
  // ---- Programs given with --program, on the whole bundle and on one cut after its header. ----
  const auto nothing = [](const fs::path&) {};
  const std::vector<std::pair<std::string, std::set<int>>> programs = {
      {"/bin/true", {3}},          {fake.string(), {0}},        {flood.string(), {3}}, {odd.string(), {3}},
      {swaps.string(), {3}},       {REHEAP_REPLAY_PROGRAM_REBUILT, {0}}, {"/dev/zero", {3}}, {"/", {3}},
      {fifo_program.string(), {3}}, {"/nonexistent", {3}}};
  for (const auto& [program, codes] : programs) {
    add({"--program " + program, nothing, true, codes, {"--program", program}});
    add({"--program " + program + " on a header-only log", cut_log(header), false, {6}, {"--program", program}});
  }
  // ---- The other recording, whole and cut. ----
  add({"the other recording's bundle", nothing, true, {0}, {}, true});

  Tally tally;
  int n = 0;
  for (const Mutant& m : mutants) {
    SCOPED_TRACE(m.name);
    const fs::path bundle = dir.path() / ("mutant-" + std::to_string(n++));
    copy_bundle(m.from_other ? other : base, bundle);
    m.damage(bundle);
    if (::testing::Test::HasFatalFailure()) return;
    const std::uint64_t rss_bound = kBaseRss + 2 * (fs::is_directory(bundle) ? allocated_bytes(bundle) : 0);
    std::vector<std::string> args = m.args;
    args.insert(args.end(), {"--timeout", "10"});
    const BoundedRun run =
        snap_replay(bundle, args, {"REPLAY_PROGRAM_FIXED=1"}, Bounds{std::chrono::milliseconds(20000), rss_bound});
    ++tally.runs;
    tally.max_rss = std::max(tally.max_rss, run.max_rss_bytes);
    tally.slowest = std::max(tally.slowest, run.elapsed);
    if (run.out.find("reheap-snap: running ") != std::string::npos) ++tally.programs_run;
    if (run.timed_out) ++tally.hangs;
    if (run.over_memory) ++tally.unbounded;
    if (run.exit_code == 0 && !m.complete) ++tally.passed_incomplete;
    const bool as_expected = m.expected.empty() ? run.exit_code != 0 : m.expected.count(run.exit_code) != 0;
    if (!as_expected) ++tally.unexpected;
    EXPECT_FALSE(run.timed_out) << run.out;
    EXPECT_FALSE(run.over_memory) << "resident " << run.max_rss_bytes << " bytes:\n" << run.out;
    EXPECT_TRUE(run.exit_code != 0 || m.complete) << "an incomplete bundle passed:\n" << run.out;
    EXPECT_TRUE(as_expected) << "exit " << run.exit_code << ":\n" << run.out;
    // Every refusal is a sentence about a file or a program, never a library's bare word.
    for (const char* bare : {": stoull", ": stoi", "basic_filebuf", "std::bad_alloc"}) {
      EXPECT_EQ(run.out.find(bare), std::string::npos) << run.out;
    }
    std::error_code ignored;
    fs::remove_all(bundle, ignored);
  }
  std::printf("[ mutated  ] %d runs (%d ran a program): %d hangs, %d unbounded reads, %d incomplete bundles passed, "
              "%d unexpected exit codes; largest resident set %llu MiB, slowest run %lld ms\n",
              tally.runs, tally.programs_run, tally.hangs, tally.unbounded, tally.passed_incomplete, tally.unexpected,
              static_cast<unsigned long long>(tally.max_rss >> 20), static_cast<long long>(tally.slowest.count()));
  EXPECT_GE(tally.runs, 300);
  EXPECT_EQ(tally.hangs, 0);
  EXPECT_EQ(tally.unbounded, 0);
  EXPECT_EQ(tally.passed_incomplete, 0);
}

#endif

}  // namespace
}  // namespace replay_test
