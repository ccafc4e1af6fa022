// reheap-kv: a Redis-compatible (RESP2) key-value server whose shards are reactors.
//
// Start-up: the data directory's manifest says which data set the directory holds and names its
// newest complete saved set (manifest.h); each shard's files are checked against it
// (saved_set_check.h: the files say which set, shard and save they hold) and the shard restored
// from them (Runtime::restore: the heap comes back at its addresses, the data needs no parsing),
// or, for an empty set, spawned empty; a directory with no manifest and no shard file gets a new
// data set's manifest first. A set that cannot be restored - a corrupt, truncated or foreign
// file, a manifest that lies, shard files without a manifest - stops the start with the files and
// the reasons, unless --ignore-bad-snapshot says to start a new, empty data set instead, having
// moved the files into a subdirectory (manifest.h, set_aside_saved_set); a process of another
// node than the set's stops it in any case. Then the saver and one gateway per worker start, and
// the server says "ready". Before any of it the server locks its data directory, and refuses to
// start if another reheap-kv holds it (data_dir_lock.h).
//
// Shards are placed round robin over the workers. Their number is fixed by the first start
// (workers x --shards-per-worker) and kept by every later start on that directory, since a key's
// shard depends on it; a restart with another --workers spreads the same shards differently.
//
// Shutdown (SIGINT, SIGTERM): the gateways stop first, so no write is acknowledged after it;
// then the saver finishes a save under way and, when save rules are set (as Redis does), takes a
// last full save of every shard (saver.h); then the runtime shuts down. The exit status is 1 if
// that save failed: the saved set is then the previous one, whole.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <random>
#include <system_error>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "data_dir_lock.h"
#include "gateway.h"
#include "manifest.h"
#include "reserved_port.h"
#include "reheap/runtime.h"
#include "saved_set_check.h"
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

// Restores every shard of `manifest`, having checked each shard's files against it
// (saved_set_check.h); throws naming every file that failed, by shard. The files are read on one
// thread per core at most (a restore is mostly reading and checking pages, and Runtime::restore
// may be called from any thread), so a start-up with several shards takes about the time of the
// largest file per core.
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
  std::vector<std::vector<std::string>> errors(manifest.shards);
  std::atomic<std::uint32_t> next{0};
  const auto restore_some = [&] {
    for (std::uint32_t i = next.fetch_add(1); i < manifest.shards; i = next.fetch_add(1)) {
      const std::filesystem::path file = o.dir / manifest.chains[i].back();
      reheap::ReactorRestoreOptions options;
      options.worker = static_cast<int>(i % static_cast<std::uint32_t>(o.workers));
      options.spawn.name = "shard " + std::to_string(i);
      try {
        errors[i] = kv::check_shard_line(o.dir, manifest, i);
        if (!errors[i].empty()) continue;
        shards[i] = rt.restore(file, options);
      } catch (const std::exception& e) {
        // Snapshot errors name the file already; the others get it in front.
        const std::string what = e.what();
        errors[i].push_back(what.find(file.string()) != std::string::npos ? what : file.string() + ": " + what);
      }
    }
  };
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> readers;
  for (unsigned t = 1; t < std::min<unsigned>(cores, manifest.shards); ++t) readers.emplace_back(restore_some);
  restore_some();
  for (std::thread& t : readers) t.join();
  std::string failed;
  for (const std::vector<std::string>& shard_errors : errors) {
    for (const std::string& error : shard_errors) failed += (failed.empty() ? "" : "\n  ") + error;
  }
  if (failed.empty()) return shards;
  for (const reheap::ActorRef s : shards) {
    if (s.value() != 0) rt.stop(s);
  }
  for (const reheap::ActorRef s : shards) {
    if (s.value() != 0) rt.wait_stopped(s);
  }
  throw std::runtime_error(failed);
}

// Why a directory without a manifest cannot start a new data set: it holds shard files, which
// only a manifest can say what to do with (a new set's saves would be written beside them, and
// an operator who lost the manifest must not find a fresh empty server instead). Empty if it
// holds none.
std::string files_without_manifest(const std::filesystem::path& dir) {
  const std::vector<std::string> files = kv::shard_files(dir);
  if (files.empty()) return {};
  constexpr std::size_t kNamed = 32;
  std::string names;
  for (std::size_t i = 0; i < files.size() && i < kNamed; ++i) names += (i == 0 ? "" : ", ") + files[i];
  if (files.size() > kNamed) names += " and " + std::to_string(files.size() - kNamed) + " more";
  return (dir / kv::kManifestName).string() + ": no manifest, but the directory holds " +
         std::to_string(files.size()) + " shard file" + (files.size() == 1 ? "" : "s") + " (" + names +
         "), which only their manifest can restore: put it back if you have it";
}

// A new data set's id: random, so that the files of two directories never agree by chance.
std::uint64_t new_set_id() {
  std::random_device random;
  std::uint64_t id = 0;
  while (id == 0) id = std::uint64_t{random()} << 32 | random();
  return id;
}

// The saver's report at shutdown (Saver::on_shutdown), for main.
std::mutex g_closed_mutex;
std::condition_variable g_closed_changed;
std::optional<std::pair<bool, std::uint64_t>> g_closed;  // ok, the saved set's generation

void on_saver_closed(bool ok, std::uint64_t generation) {
  std::lock_guard lock(g_closed_mutex);
  g_closed.emplace(ok, generation);
  g_closed_changed.notify_all();
}

// Opens the data set of --dir: restores the saved set its manifest names, each shard's files
// checked against it first, or spawns the shards of an empty set (writing a new data set's
// manifest on a first start), into `shards`; fills the saver's view of it. False, having said why
// on stderr, when the start must stop: a saved set that cannot be restored (unless
// --ignore-bad-snapshot: then its files are moved aside and a new data set starts empty), or a
// process of another node than the data set's.
bool open_data_set(reheap::Runtime& rt, const Options& o, kv::SaverConfig& saver, std::vector<reheap::ActorRef>& shards) {
  const auto load_start = std::chrono::steady_clock::now();
  const std::uint32_t node = rt.identity().node;
  std::optional<kv::Manifest> manifest;
  std::string unrestorable;  // why the saved set cannot be restored, naming the files
  try {
    manifest = kv::read_manifest(o.dir);
    if (!manifest) unrestorable = files_without_manifest(o.dir);
  } catch (const std::exception& e) {
    unrestorable = e.what();
  }
  if (manifest && manifest->node != node) {
    // Not for --ignore-bad-snapshot: the set is sound, the process is not the one to restore it.
    // Its shards' heaps lie in the address range of the node that saved them, which a process of
    // another node would take over (reheap/node_identity.h).
    std::fprintf(stderr,
                 "reheap-kv: refusing to start: %s: the data set was saved by node %u, and this process is node "
                 "%u (REHEAP_NODE); start it with REHEAP_NODE=%u, or give this node another data directory\n",
                 (o.dir / kv::kManifestName).c_str(), manifest->node, node, manifest->node);
    return false;
  }
  if (manifest && !manifest->chains.empty()) {
    try {
      shards = restore_set(rt, o, *manifest, saver);
    } catch (const std::exception& e) {
      unrestorable = e.what();
    }
  }
  std::uint64_t generation = 0;  // of a new data set: above every file of the directory
  if (!unrestorable.empty()) {
    if (!o.ignore_bad_snapshot) {
      std::fprintf(stderr,
                   "reheap-kv: cannot restore the saved set:\n  %s\n"
                   "reheap-kv: refusing to start; fix or move the data directory, or start with "
                   "--ignore-bad-snapshot to start empty (the set's files are then moved into "
                   "an unrestorable-<n> subdirectory, and none is deleted)\n",
                   unrestorable.c_str());
      return false;
    }
    // The new set must not reuse the bad set's file names, even when the manifest is the bad
    // part: it saves above every file of the directory.
    generation = kv::newest_file_generation(o.dir);
    std::filesystem::path kept;
    try {
      kept = kv::set_aside_saved_set(o.dir);
    } catch (const std::exception& moving) {
      std::fprintf(stderr,
                   "reheap-kv: cannot restore the saved set:\n  %s\n"
                   "reheap-kv: refusing to start, as its files could not be set aside: %s\n",
                   unrestorable.c_str(), moving.what());
      return false;
    }
    std::fprintf(stderr,
                 "reheap-kv: cannot restore the saved set, starting empty (--ignore-bad-snapshot):\n  %s\n"
                 "reheap-kv: the set's files, the good shards' among them, are kept in %s\n",
                 unrestorable.c_str(), kept.c_str());
    saver.file_bytes.clear();
    manifest.reset();
  }
  if (!manifest) {
    // A new data set: its manifest first, so that the directory says which set it holds before
    // any file of it exists (manifest.h).
    kv::Manifest fresh;
    fresh.set_id = new_set_id();
    fresh.node = node;
    fresh.generation = generation;
    fresh.shards = static_cast<std::uint32_t>(o.workers * o.shards_per_worker);
    fresh.saved_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
    try {
      kv::write_manifest(o.dir, fresh);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "reheap-kv: refusing to start: cannot write the new data set's manifest: %s\n", e.what());
      return false;
    }
    manifest = fresh;
  }
  saver.loaded = *manifest;
  saver.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  if (shards.empty()) {
    for (std::uint32_t i = 0; i < manifest->shards; ++i) {
      reheap::SpawnOptions options;
      options.worker = static_cast<int>(i % static_cast<std::uint32_t>(o.workers));
      options.name = "shard " + std::to_string(i);
      shards.push_back(rt.spawn<kv::Shard>(options, i, manifest->shards, manifest->set_id));
    }
  } else {
    std::printf("reheap-kv: restored %zu shards of generation %llu in %.3f s\n", shards.size(),
                static_cast<unsigned long long>(manifest->generation), saver.load_seconds);
  }
  // The shard files the set does not use: this data set's go with the next save, and whatever
  // else is there stays, whoever put it there.
  kv::UnnamedFiles unnamed;
  try {
    unnamed = kv::sort_unnamed_files(o.dir, *manifest);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reheap-kv: refusing to start: %s\n", e.what());
    return false;
  }
  if (!unnamed.own.empty()) {
    std::string names;
    for (const std::string& name : unnamed.own) names += "\n  " + (o.dir / name).string();
    std::fprintf(stderr,
                 "reheap-kv: files of this data set that the saved set does not use (of an unfinished save, or "
                 "of an older set), which the next save deletes:%s\n",
                 names.c_str());
  }
  if (!unnamed.foreign.empty()) {
    std::string names;
    for (const std::string& line : unnamed.foreign) names += "\n  " + line;
    std::fprintf(stderr, "reheap-kv: shard files that are not this data set's, left alone (no save deletes or "
                 "overwrites them):%s\n", names.c_str());
  }
  saver.unused_own_files = std::move(unnamed.own);
  return true;
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
  saver.on_closed = &on_saver_closed;
  std::vector<reheap::ActorRef> shards;
  if (!open_data_set(rt, o, saver, shards)) return 1;
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
  // The saver finishes a save under way (a save never leaves its files unnamed), then takes the
  // last save if there are rules (as Redis does), and reports; a failed shard saves nothing more.
  const bool save_on_the_way_out = !rules.empty() && !g_failed.load();
  rt.send(saver_ref, kv::SaverShutdown{.save = save_on_the_way_out});
  std::optional<std::pair<bool, std::uint64_t>> closed;
  {
    std::unique_lock lock(g_closed_mutex);
    // Until the saver has reported, or is gone (it failed, and that failure is reported).
    while (!g_closed && rt.alive(saver_ref)) g_closed_changed.wait_for(lock, std::chrono::milliseconds(100));
    closed = g_closed;
  }
  rt.stop(saver_ref);
  rt.wait_stopped(saver_ref);
  const bool saved = !save_on_the_way_out || (closed && closed->first);
  if (save_on_the_way_out && saved) {
    std::printf("reheap-kv: saved generation %llu on the way out\n", static_cast<unsigned long long>(closed->second));
  }
  std::fflush(stdout);
  rt.shutdown();
  return g_failed.load() || !saved ? 1 : 0;
}
