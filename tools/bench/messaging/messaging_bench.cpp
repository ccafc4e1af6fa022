#include "messaging_bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>
#include <vector>

namespace msgbench {

namespace {

const char* g_impl = "?";
const char* g_extra_usage = nullptr;
const char* g_variant = nullptr;

struct Note {
  const char* key;
  double value;
};
std::vector<Note> g_notes;

struct TestInfo {
  Test test;
  const char* name;
  std::uint64_t default_n;
};

constexpr TestInfo kTests[] = {
    {Test::pingpong, "pingpong", 200'000},
    {Test::oneway, "oneway", 10'000'000},
    {Test::spawn, "spawn", 1'000'000},
    {Test::spawnmain, "spawnmain", 1'000'000},
    {Test::fanin, "fanin", 10'000'000},
};

[[noreturn]] void usage(int status) {
  std::FILE* out = status == 0 ? stdout : stderr;
  std::fprintf(out,
               "usage: messaging_bench_%s <test> [--n N] [--reps R] [--no-warmup] [--senders S]\n"
               "\n"
               "tests (n counts):\n"
               "  pingpong  round trips between two actors           (default 200000)\n"
               "  oneway    messages from one sender to one receiver  (default 10000000)\n"
               "  spawn     actors spawned by an actor and stopped    (default 1000000)\n"
               "  spawnmain actors spawned from main and stopped      (default 1000000)\n"
               "  fanin     messages in total, from S senders to one receiver\n"
               "            (default 10000000, S = 100; n must be a multiple of S)\n"
               "\n"
               "Each repetition prints: RESULT impl=%s test=<test> n=<n> seconds=<s> rate=<n/s>\n"
               "An untimed warm-up with n/10 runs first unless --no-warmup.\n",
               g_impl, g_impl);
  if (g_extra_usage != nullptr) std::fprintf(out, "\n%s", g_extra_usage);
  std::exit(status);
}

std::uint64_t parse_count(const char* flag, const char* text) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || value == 0) {
    std::fprintf(stderr, "messaging_bench_%s: %s wants a positive integer, not '%s'\n", g_impl,
                 flag, text);
    usage(2);
  }
  return value;
}

}  // namespace

const char* test_name(Test test) noexcept {
  for (const TestInfo& info : kTests) {
    if (info.test == test) return info.name;
  }
  return "?";
}

bool take_flag(int& argc, char** argv, const char* flag) noexcept {
  bool found = false;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) {
      found = true;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  argv[argc] = nullptr;
  return found;
}

const char* take_value(int& argc, char** argv, const char* flag) {
  const char* value = nullptr;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "messaging_bench: %s wants a value\n", flag);
        std::exit(2);
      }
      value = argv[++i];
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  argv[argc] = nullptr;
  return value;
}

void set_variant(const char* variant) noexcept { g_variant = variant; }

Options parse_options(int argc, char** argv, const char* impl, const char* extra_usage) {
  g_impl = impl;
  g_extra_usage = extra_usage;
  Options options;
  bool have_test = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "-h" || arg == "--help") {
      usage(0);
    } else if (arg == "--n" && has_value) {
      options.n = parse_count("--n", argv[++i]);
    } else if (arg == "--reps" && has_value) {
      options.reps = static_cast<int>(std::min<std::uint64_t>(parse_count("--reps", argv[++i]),
                                                              1000));
    } else if (arg == "--senders" && has_value) {
      options.senders = parse_count("--senders", argv[++i]);
    } else if (arg == "--no-warmup") {
      options.warmup = false;
    } else if (!have_test && !arg.starts_with("-")) {
      const auto* info = std::find_if(std::begin(kTests), std::end(kTests),
                                      [&](const TestInfo& t) { return arg == t.name; });
      if (info == std::end(kTests)) {
        std::fprintf(stderr, "messaging_bench_%s: unknown test '%s'\n", impl, argv[i]);
        usage(2);
      }
      options.test = info->test;
      have_test = true;
    } else {
      std::fprintf(stderr, "messaging_bench_%s: unexpected argument '%s'\n", impl, argv[i]);
      usage(2);
    }
  }
  if (!have_test) usage(2);
  if (options.n == 0) {
    for (const TestInfo& info : kTests) {
      if (info.test == options.test) options.n = info.default_n;
    }
  }
  if (options.test == Test::fanin && options.n % options.senders != 0) {
    std::fprintf(stderr, "messaging_bench_%s: fanin: --n %llu is not a multiple of --senders %llu\n",
                 impl, static_cast<unsigned long long>(options.n),
                 static_cast<unsigned long long>(options.senders));
    usage(2);
  }
  return options;
}

std::uint64_t warmup_n(const Options& options) noexcept {
  std::uint64_t n = std::max<std::uint64_t>(options.n / 10, 1000);
  if (options.test == Test::fanin) {
    n = std::max<std::uint64_t>(n / options.senders, 1) * options.senders;
  }
  return n;
}

void print_result(const char* impl, Test test, std::uint64_t n, Seconds seconds) {
  const char* dash = g_variant != nullptr ? "-" : "";
  const char* variant = g_variant != nullptr ? g_variant : "";
  if (seconds) {
    std::printf("RESULT impl=%s test=%s%s%s n=%llu seconds=%.6f rate=%.0f\n", impl,
                test_name(test), dash, variant, static_cast<unsigned long long>(n), *seconds,
                static_cast<double>(n) / *seconds);
  } else {
    std::printf("RESULT impl=%s test=%s%s%s n=%llu seconds=n/a rate=n/a\n", impl, test_name(test),
                dash, variant, static_cast<unsigned long long>(n));
  }
  for (const Note& entry : g_notes) {
    std::printf("NOTE impl=%s test=%s%s%s %s=%.1f\n", impl, test_name(test), dash, variant,
                entry.key, entry.value);
  }
  g_notes.clear();
  std::fflush(stdout);
}

namespace {
double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}
}  // namespace

int print_idle_cpu(const char* impl, std::uint64_t ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // threads started and asleep
  const double before = cpu_seconds();
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  const double wall = seconds_between(start, Clock::now());
  const double used = cpu_seconds() - before;
  const char* dash = g_variant != nullptr ? "-" : "";
  const char* variant = g_variant != nullptr ? g_variant : "";
  std::printf("IDLE impl=%s%s%s ms=%llu cpu_pct=%.2f\n", impl, dash, variant,
              static_cast<unsigned long long>(ms), 100.0 * used / wall);
  std::fflush(stdout);
  return 0;
}

void note(const char* key, double value) { g_notes.push_back(Note{key, value}); }

void drop_notes() noexcept { g_notes.clear(); }

void fail(const char* format, ...) {
  std::fflush(stdout);
  std::fprintf(stderr, "messaging_bench_%s: CHECK FAILED: ", g_impl);
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
  std::abort();
}

}  // namespace msgbench
