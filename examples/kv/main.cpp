// reheap-kv: a Redis-compatible (RESP2) key-value server whose shards are reactors.
//
// Start-up: the data directory's manifest names the newest complete saved set (manifest.h); each
// shard is restored from its file (Runtime::restore: the heap comes back at its addresses, the
// data needs no parsing) or, without a manifest, spawned empty. A set that cannot be restored -
// a corrupt, truncated or foreign file, a manifest that lies - stops the start with the file and
// the reason, unless --ignore-bad-snapshot says to start empty instead, having moved the set's
// files into a subdirectory (manifest.h, set_aside_saved_set). Then the saver and one
// gateway per worker start, and the server says "ready". Before any of it the server locks its
// data directory, and refuses to start if another reheap-kv holds it (data_dir_lock.h).
//
// Shards are placed round robin over the workers. Their number is fixed by the first start
// (workers x --shards-per-worker) and kept by every later start on that directory, since a key's
// shard depends on it; a restart with another --workers spreads the same shards differently.
//
// Shutdown (SIGINT, SIGTERM): the gateways stop first, so no write is acknowledged after it;
// then, when save rules are set (as Redis does), a last full save of every shard; then the
// runtime shuts down.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <system_error>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "data_dir_lock.h"
#include "gateway.h"
#include "manifest.h"
#include "reserved_port.h"
#include "reheap/runtime.h"
#include "saver.h"
#include "shard.h"

namespace {

struct Options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  int workers = 1;
  int shards_per_worker = 8;
  std::filesystem::path dir = ".";
  std::string save = "3600 1 300 100 60 10000";  // Redis 7's default
  bool ignore_bad_snapshot = false;
};

std::atomic<int> g_listening{0};  // gateways whose on_start is over
std::atomic<bool> g_failed{false};

void on_listening(bool ok, const char* error) {
  if (!ok) {
    std::fprintf(stderr, "reheap-kv: cannot listen: %s\n", error);
    g_failed.store(true);
  }
  g_listening.fetch_add(1);
  g_listening.notify_all();
}

[[noreturn]] void usage(int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: reheap-kv [--host ADDR] [--port P] [--workers N] [--shards-per-worker S]\n"
               "                 [--dir DIR] [--save \"SECONDS CHANGES ...\"] [--ignore-bad-snapshot]\n"
               "  --host ADDR              numeric address to listen on (default 127.0.0.1)\n"
               "  --port P                 TCP port (default 6379)\n"
               "  --workers N              worker threads, each with a gateway (default 1)\n"
               "  --shards-per-worker S    shards of a new data set per worker (default 8)\n"
               "  --dir DIR                data directory: manifest and shard snapshots (default .);\n"
               "                           one server per directory (a second one refuses to start)\n"
               "  --save \"S C ...\"         save after S seconds if C writes happened; \"\" never\n"
               "                           (default \"3600 1 300 100 60 10000\", as Redis)\n"
               "  --ignore-bad-snapshot    start empty when the saved set cannot be restored (its files\n"
               "                           are moved into DIR/unrestorable-<n>)\n");
  std::exit(status);
}

long parse_number(const char* flag, const char* text, long min, long max) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < min || value > max) {
    std::fprintf(stderr, "reheap-kv: %s wants a number from %ld to %ld, not '%s'\n", flag, min, max, text);
    usage(2);
  }
  return value;
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    // The value of the option at argv[i], which every option but the flags below has.
    const auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "reheap-kv: %s needs a value\n", argv[i]);
        usage(2);
      }
      return argv[++i];
    };
    if (arg == "--port") {
      o.port = static_cast<std::uint16_t>(parse_number("--port", value(), 0, 65535));
    } else if (arg == "--workers") {
      o.workers = static_cast<int>(parse_number("--workers", value(), 1, 256));
    } else if (arg == "--shards-per-worker") {
      o.shards_per_worker = static_cast<int>(parse_number("--shards-per-worker", value(), 1, 1024));
    } else if (arg == "--host") {
      o.host = value();
    } else if (arg == "--dir") {
      o.dir = value();
    } else if (arg == "--save") {
      o.save = value();
    } else if (arg == "--ignore-bad-snapshot") {
      o.ignore_bad_snapshot = true;
    } else if (arg == "-h" || arg == "--help") {
      usage(0);
    } else {
      std::fprintf(stderr, "reheap-kv: unknown argument '%s'\n", argv[i]);
      usage(2);
    }
  }
  return o;
}

// "3600 1 300 100" -> {3600, 1}, {300, 100}; "" -> none.
std::vector<kv::SaveRule> parse_save_rules(const std::string& text) {
  std::istringstream in(text);
  std::vector<kv::SaveRule> rules;
  std::string seconds, changes;
  while (in >> seconds) {
    if (!(in >> changes)) {
      std::fprintf(stderr, "reheap-kv: --save wants pairs of SECONDS CHANGES, not '%s'\n", text.c_str());
      usage(2);
    }
    rules.push_back(kv::SaveRule{parse_number("--save seconds", seconds.c_str(), 1, 1L << 40),
                                 static_cast<std::uint64_t>(parse_number("--save changes", changes.c_str(), 0, 1L << 60))});
  }
  return rules;
}

std::string canonical_rules(const std::vector<kv::SaveRule>& rules) {
  std::string text;
  for (const kv::SaveRule& r : rules) {
    if (!text.empty()) text += ' ';
    text += std::to_string(r.seconds) + ' ' + std::to_string(r.changes);
  }
  return text;
}

// Restores every shard of `manifest`; throws naming the file that failed (the lowest shard's, if
// several did). The files are read on one thread per core at most (a restore is mostly reading
// and checking pages, and Runtime::restore may be called from any thread), so a start-up with
// several shards takes about the time of the largest file per core.
std::vector<reheap::ActorRef> restore_set(reheap::Runtime& rt, const Options& o, const kv::Manifest& manifest,
                                          kv::SaverConfig& saver) {
  for (std::uint32_t i = 0; i < manifest.shards; ++i) {
    for (const std::string& name : manifest.chains[i]) {
      std::error_code ec;
      const auto size = std::filesystem::file_size(o.dir / name, ec);
      saver.file_bytes[name] = ec ? 0 : size;
    }
  }
  std::vector<reheap::ActorRef> shards(manifest.shards);
  std::vector<std::string> errors(manifest.shards);
  std::atomic<std::uint32_t> next{0};
  const auto restore_some = [&] {
    for (std::uint32_t i = next.fetch_add(1); i < manifest.shards; i = next.fetch_add(1)) {
      const std::filesystem::path file = o.dir / manifest.chains[i].back();
      reheap::ReactorRestoreOptions options;
      options.worker = static_cast<int>(i % static_cast<std::uint32_t>(o.workers));
      options.spawn.name = "shard " + std::to_string(i);
      try {
        shards[i] = rt.restore(file, options);
      } catch (const std::exception& e) {
        // Snapshot errors name the file already; the others get it in front.
        const std::string what = e.what();
        errors[i] = what.find(file.string()) != std::string::npos ? what : file.string() + ": " + what;
      }
    }
  };
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> readers;
  for (unsigned t = 1; t < std::min<unsigned>(cores, manifest.shards); ++t) readers.emplace_back(restore_some);
  restore_some();
  for (std::thread& t : readers) t.join();
  for (std::uint32_t i = 0; i < manifest.shards; ++i) {
    if (errors[i].empty()) continue;
    for (const reheap::ActorRef s : shards) {
      if (s.value() != 0) rt.stop(s);
    }
    for (const reheap::ActorRef s : shards) {
      if (s.value() != 0) rt.wait_stopped(s);
    }
    throw std::runtime_error(errors[i]);
  }
  return shards;
}

// The last save on the way out: full snapshots taken from here (the gateways are gone, so nothing
// changes under them), then the manifest. Returns false after printing why it failed.
bool final_save(reheap::Runtime& rt, const Options& o, const std::vector<reheap::ActorRef>& shards) {
  try {
    const std::optional<kv::Manifest> previous = kv::read_manifest(o.dir);
    kv::Manifest next;
    next.generation = (previous ? previous->generation : 0) + 1;
    // A save that the saver left unfinished may have used the next generation: skip past it.
    while (std::filesystem::exists(o.dir / kv::shard_file_name(0, next.generation))) ++next.generation;
    next.shards = static_cast<std::uint32_t>(shards.size());
    next.saved_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch()).count();
    for (std::uint32_t i = 0; i < shards.size(); ++i) {
      const std::string name = kv::shard_file_name(i, next.generation);
      rt.snapshot(shards[i], o.dir / name);
      next.chains.push_back({name});
    }
    kv::write_manifest(o.dir, next);
    kv::delete_unnamed_files(o.dir, next);
    std::printf("reheap-kv: saved generation %llu on the way out\n", static_cast<unsigned long long>(next.generation));
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reheap-kv: the save on the way out failed, the saved set is the previous one: %s\n", e.what());
    return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  const std::vector<kv::SaveRule> rules = parse_save_rules(o.save);

  // Before any thread exists, as in http_server.cpp: the workers inherit the mask, and sigwait
  // below is the only taker of these signals.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  struct sigaction action{};
  action.sa_handler = [](int) {};
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  std::error_code ec;
  std::filesystem::create_directories(o.dir, ec);
  if (!std::filesystem::is_directory(o.dir)) {
    std::fprintf(stderr, "reheap-kv: the data directory %s is not a directory\n", o.dir.c_str());
    return 1;
  }
  // Before the manifest is read, and held until the process ends (past the save on the way out):
  // another server on this directory would replace this one's saves (data_dir_lock.h).
  std::optional<kv::DataDirLock> dir_lock;
  try {
    dir_lock.emplace(o.dir);
  } catch (const kv::DataDirLockError& e) {
    std::fprintf(stderr, "reheap-kv: refusing to start: %s\n", e.what());
    return 1;
  }

  // --port 0: one port for every gateway, picked before the first listens (reserved_port.h).
  std::optional<examples::ReservedPort> reserved;
  try {
    reserved.emplace(o.host, o.port);
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "reheap-kv: cannot listen: %s\n", e.what());
    return 1;
  }
  const std::uint16_t port = reserved->port();

  reheap::RuntimeConfig config;
  config.workers = o.workers;
  config.on_failure = [](const reheap::ReactorFailed& failure) {
    // A shard that fails loses its keys' service; stop rather than answer errors for them.
    std::fprintf(stderr, "reheap-kv: %s failed in %s: %s\n", failure.name.c_str(), failure.handler.c_str(),
                 failure.what.c_str());
    g_failed.store(true);
    kill(getpid(), SIGTERM);
  };
  reheap::Runtime rt(std::move(config));

  kv::SaverConfig saver;
  saver.dir = o.dir;
  saver.rules = rules;
  saver.port = port;
  saver.workers = o.workers;
  saver.process_id = getpid();
  std::vector<reheap::ActorRef> shards;
  const auto load_start = std::chrono::steady_clock::now();
  try {
    const std::optional<kv::Manifest> manifest = kv::read_manifest(o.dir);
    if (manifest) {
      shards = restore_set(rt, o, *manifest, saver);
      saver.loaded = *manifest;
    }
  } catch (const std::exception& e) {
    if (!o.ignore_bad_snapshot) {
      std::fprintf(stderr,
                   "reheap-kv: cannot restore the saved set: %s\n"
                   "reheap-kv: refusing to start; fix or move the data directory, or start with "
                   "--ignore-bad-snapshot to start empty (the set's files are then moved into "
                   "an unrestorable-<n> subdirectory)\n",
                   e.what());
      return 1;
    }
    // The next save must not reuse the bad set's file names, even when the manifest is the bad
    // part: it saves above every file of the directory.
    const std::uint64_t newest = kv::newest_file_generation(o.dir);
    std::filesystem::path kept;
    try {
      kept = kv::set_aside_saved_set(o.dir);
    } catch (const std::exception& moving) {
      std::fprintf(stderr,
                   "reheap-kv: cannot restore the saved set: %s\n"
                   "reheap-kv: refusing to start, as its files could not be set aside: %s\n",
                   e.what(), moving.what());
      return 1;
    }
    std::fprintf(stderr,
                 "reheap-kv: cannot restore the saved set, starting empty (--ignore-bad-snapshot): %s\n"
                 "reheap-kv: the set's files, the good shards' among them, are kept in %s\n",
                 e.what(), kept.c_str());
    saver.file_bytes.clear();
    saver.loaded = kv::Manifest{};
    saver.loaded.generation = newest;
  }
  saver.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  if (shards.empty()) {
    const auto count = static_cast<std::uint32_t>(o.workers * o.shards_per_worker);
    for (std::uint32_t i = 0; i < count; ++i) {
      reheap::SpawnOptions options;
      options.worker = static_cast<int>(i % static_cast<std::uint32_t>(o.workers));
      options.name = "shard " + std::to_string(i);
      shards.push_back(rt.spawn<kv::Shard>(options, i, count));
    }
  } else {
    std::printf("reheap-kv: restored %zu shards of generation %llu in %.3f s\n", shards.size(),
                static_cast<unsigned long long>(saver.loaded.generation), saver.load_seconds);
  }
  saver.shards = shards;

  reheap::SpawnOptions saver_options;
  saver_options.name = "saver";
  saver_options.worker = 0;
  const reheap::ActorRef saver_ref = rt.spawn<kv::Saver>(saver_options, saver);

  std::vector<reheap::ActorRef> gateways;
  for (int w = 0; w < o.workers; ++w) {
    kv::GatewayConfig g;
    g.host = o.host;
    g.port = port;
    g.shards = shards;
    g.saver = saver_ref;
    g.save_rules = canonical_rules(rules);
    g.on_listening = &on_listening;
    reheap::SpawnOptions options;
    options.worker = w;
    options.name = "gateway " + std::to_string(w);
    gateways.push_back(rt.spawn<kv::Gateway>(options, g));
  }
  for (int n = g_listening.load(); n < o.workers; n = g_listening.load()) g_listening.wait(n);
  if (g_failed.load()) {
    rt.shutdown();
    return 1;
  }
  std::printf("reheap-kv: ready on %s:%u (%d worker%s, %zu shards, data in %s)\n", o.host.c_str(), port, o.workers,
              o.workers == 1 ? "" : "s", shards.size(), o.dir.c_str());
  std::fflush(stdout);

  int signal = 0;
  sigwait(&signals, &signal);
  std::printf("reheap-kv: %s, shutting down\n", signal == SIGINT ? "SIGINT" : "SIGTERM");
  for (const reheap::ActorRef g : gateways) rt.stop(g);
  for (const reheap::ActorRef g : gateways) rt.wait_stopped(g);
  rt.stop(saver_ref);
  rt.wait_stopped(saver_ref);
  bool saved = true;
  if (!rules.empty() && !g_failed.load()) saved = final_save(rt, o, shards);
  std::fflush(stdout);
  rt.shutdown();
  return g_failed.load() || !saved ? 1 : 0;
}
