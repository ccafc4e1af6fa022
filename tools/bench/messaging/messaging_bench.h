// The part of the messaging benchmarks that every implementation shares: the tests, their
// default sizes, the command line, the warm-up and repetition loop, the RESULT lines and the
// correctness checks' failure path.
//
// Each implementation (messaging_bench_reheap, messaging_bench_caf, messaging_bench_rawuv) is one
// executable that links this file and provides one function, `run_once(test, n)`, which
// performs the test once with `n` units of work, checks its result, and returns the measured
// seconds. The command line is
//
//   <bin> <pingpong|oneway|spawn|spawnmain|fanin> [--n N] [--reps R] [--no-warmup] [--senders S]
//
// and every repetition prints exactly one line
//
//   RESULT impl=<impl> test=<test> n=<N> seconds=<s> rate=<N/s>
//
// (`seconds=n/a rate=n/a` for a test the implementation does not have). tools/bench/
// messaging_bench.sh reads only these lines; anything else an implementation prints is for
// people.
//
// What `n` counts, per test (see tools/bench/README.md, "Messaging benchmarks"):
//   pingpong  round trips between two actors on different threads        (default 200,000)
//   oneway    messages from one sender to one receiver on another thread  (default 10,000,000)
//   spawn     actors spawned (by an actor) and stopped                     (default 1,000,000)
//   spawnmain actors spawned from main, outside the runtime, and stopped   (default 1,000,000)
//   fanin     messages in total from `--senders` senders (default 100) to one receiver
//             (default 10,000,000, that is 100 x 100,000)
//
// Idle CPU: `<bin> --idle-cpu MS` (reheap and CAF) builds the runtime as the tests do, lets it
// settle for 200 ms, then measures the CPU time of the whole process (getrusage, every thread)
// over MS milliseconds in which nothing is sent and main sleeps, and prints one line
//
//   IDLE impl=<impl> ms=<MS> cpu_pct=<CPU time over MS, in % of one core>
//
// (a variant adds -<variant> to impl, like test= above). It answers "does an idle runtime burn a
// core polling", which users of polling schedulers complain of.
//
// Before the timed repetitions, the test runs once untimed with n/10 (at least 1,000) so that
// threads, allocator arenas and page mappings exist and are warm in every implementation alike;
// `--no-warmup` skips it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace msgbench {

enum class Test { pingpong, oneway, spawn, spawnmain, fanin };

const char* test_name(Test test) noexcept;

struct Options {
  Test test = Test::pingpong;
  std::uint64_t n = 0;          // units of work per repetition (see the table above)
  int reps = 1;                 // timed repetitions in this process
  bool warmup = true;           // one untimed run with n/10 first
  std::uint64_t senders = 100;  // fanin only
};

// Parses argv; prints usage and exits on --help (status 0) or on an error (status 2).
// `extra_usage` describes the implementation's own flags (nullptr: none), which it must have
// removed from argv with take_flag before.
Options parse_options(int argc, char** argv, const char* impl, const char* extra_usage = nullptr);

// Removes every occurrence of `flag` from argv (adjusting argc); returns whether there was one.
bool take_flag(int& argc, char** argv, const char* flag) noexcept;

// Removes every occurrence of `flag VALUE` from argv (adjusting argc); returns the last VALUE, or
// nullptr if the flag is absent. A flag without a value is an error (usage, status 2).
const char* take_value(int& argc, char** argv, const char* flag);

// Names a variant of the tests in the RESULT and NOTE lines, which then say
// `test=<test>-<variant>` (reheap's `--spin` prints test=pingpong-spin, say), so that the driver
// and people reading raw lines never mix a variant up with the plain test. nullptr: no variant.
void set_variant(const char* variant) noexcept;

// What a test run returns: the seconds it measured, or nothing when this implementation does not
// have the test (printed as n/a).
using Seconds = std::optional<double>;

// Runs the warm-up and the repetitions, printing one RESULT line per repetition. Returns the
// process exit status.
template <class RunOnce>
int run(const Options& options, const char* impl, RunOnce&& run_once);

// Prints the RESULT line of one repetition, followed by a `NOTE impl=.. test=.. key=value` line
// for each note() the repetition made.
void print_result(const char* impl, Test test, std::uint64_t n, Seconds seconds);

// Records a fact about the current run (for example how often messages crossed threads), printed
// after its RESULT line; the warm-up's notes are dropped.
void note(const char* key, double value);
void drop_notes() noexcept;

// Measures and prints the IDLE line (see above) for an already built runtime. Returns 0.
int print_idle_cpu(const char* impl, std::uint64_t ms);

// Aborts the process with a message naming the implementation and what went wrong. Every
// implementation calls it when a received count, sum or order is not what was sent.
[[noreturn, gnu::format(printf, 1, 2)]] void fail(const char* format, ...);

// 1 + 2 + ... + n, the sum a receiver must see when the values sent are 1..n.
constexpr std::uint64_t sum_1_to(std::uint64_t n) noexcept { return n * (n + 1) / 2; }

// The benchmarks' clock: CLOCK_MONOTONIC through steady_clock, comparable across threads.
using Clock = std::chrono::steady_clock;

inline double seconds_between(Clock::time_point start, Clock::time_point end) noexcept {
  return std::chrono::duration<double>(end - start).count();
}

// ---- implementation ------------------------------------------------------------------------

std::uint64_t warmup_n(const Options& options) noexcept;

template <class RunOnce>
int run(const Options& options, const char* impl, RunOnce&& run_once) {
  if (options.warmup) {
    (void)run_once(options.test, warmup_n(options));
    drop_notes();
  }
  for (int rep = 0; rep < options.reps; ++rep) {
    const Seconds seconds = run_once(options.test, options.n);
    print_result(impl, options.test, options.n, seconds);
  }
  return 0;
}

}  // namespace msgbench
