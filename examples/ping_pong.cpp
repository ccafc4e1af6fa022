// Ping pong: the smallest program that shows how to write reactors.
//
// Two Players, each a reactor on its own worker thread, hit a ball back and forth until it has
// been hit 2 x --rounds times; then main prints the result and each reactor's statistics, and
// shuts the runtime down.
//
//   ping_pong [--rounds N]                 play N round trips (default 10000)
//   ping_pong --snapshot FILE [--rounds N] the same, and save "pong" to FILE halfway through
//   ping_pong --restore FILE               a new process: bring "pong" back from FILE, give it
//                                          a new opponent, and play the game to its end (or say
//                                          why FILE cannot come back, and exit with status 1)
//
// What it shows:
//   - A reactor is a class derived from reheap::Reactor. Its members live in its own heap, and so
//     does everything its handlers allocate (the std::strings below).
//   - Typed handlers: handle<&Player::on_ball>() in the constructor; on_ball(const Ball&) then
//     gets every Ball.
//   - Two kinds of messages: Ball is trivially copyable, so it travels as raw bytes and the
//     handler reads it in place; Hello holds a std::string, so it is encoded with msgpack
//     (MSGPACK_DEFINE) and decoded into the receiver's heap.
//   - Runtime::spawn with SpawnOptions::worker to pin each Player to a worker; Runtime::stats;
//     Runtime::snapshot and Runtime::restore; Runtime::shutdown.
//
// Snapshots: Runtime::snapshot saves a reactor's heap between two of its events while the game
// goes on. Messages in flight are not part of a snapshot: the ball that "pong" had just hit is
// lost with the first process, so the restored pong serves it again once its new opponent says
// hello. The heap holds pointers into the program (each Player's vtable), so both runs must load
// the program at the same addresses: main() starts with reexec_without_aslr. A Player holds no
// pointer to anything outside its heap (it reports the end of the game through globals, which are
// the program's static data), which is what makes it restorable in another process.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "reheap/aslr.h"
#include "reheap/runtime.h"

namespace {

// ---- messages ----------------------------------------------------------------------------------

// Raw: trivially copyable, copied as bytes, read in place by the receiver.
struct Ball {
  std::uint64_t hit;   // 1 for the serve, then +1 per hit
  std::uint64_t last;  // the hit that ends the game
};

// msgpack: not trivially copyable (a std::string), so MSGPACK_DEFINE says how to encode it.
struct Hello {
  std::string name;
  reheap::ActorRef from;
  MSGPACK_DEFINE(name, from)
};

// ---- how the game's end reaches main -----------------------------------------------------------

// Globals are the program's static data: a reactor may refer to them and still be restorable.
std::atomic<std::uint64_t> g_hits{0};       // the latest hit, for main to find "halfway"
std::atomic<std::uint64_t> g_resumed{0};    // the hit a restored player resumes after
std::atomic<std::uint64_t> g_final_hit{0};  // set once, by the player who hits the last ball

void game_over(std::uint64_t hit) {
  g_final_hit.store(hit, std::memory_order_release);
  g_final_hit.notify_all();
}

// ---- the reactor -------------------------------------------------------------------------------

class Player final : public reheap::Reactor {
 public:
  // `opponent` and `last`: set for the player who introduces itself (and serves if last > 0).
  explicit Player(std::string name, reheap::ActorRef opponent = {}, std::uint64_t last = 0)
      : name_(std::move(name)), opponent_(opponent), serve_last_(last) {
    handle<&Player::on_hello>();
    handle<&Player::on_ball>();
  }

  void on_start() override {
    if (!opponent_) return;  // waits for a Hello
    send(opponent_, Hello{name_, self()});
    if (serve_last_ > 0) send(opponent_, Ball{1, serve_last_});  // after the Hello: FIFO
  }

  // A restored player: its state is as it was at the snapshot, its old opponent is gone.
  void on_restored() override {
    std::printf("%s: restored after hit %llu (%llu hits so far, against %s); waiting for a new "
                "opponent\n",
                name_.c_str(), static_cast<unsigned long long>(last_hit_),
                static_cast<unsigned long long>(hits_), opponent_name_.c_str());
    g_resumed.store(last_hit_, std::memory_order_relaxed);
    serve_again_ = true;
  }

 private:
  void on_hello(const Hello& hello) {
    opponent_ = hello.from;
    opponent_name_ = hello.name;
    if (serve_again_) {  // the ball we hit before the snapshot never reached anyone: again
      serve_again_ = false;
      send(opponent_, Ball{last_hit_ + 1, last_});
    }
  }

  void on_ball(const Ball& ball) {
    ++hits_;
    last_hit_ = ball.hit;
    last_ = ball.last;
    g_hits.store(ball.hit, std::memory_order_relaxed);
    if (ball.hit == ball.last) {
      game_over(ball.hit);
      return;
    }
    send(opponent_, Ball{ball.hit + 1, ball.last});
  }

  // All of it in this reactor's heap, saved by a snapshot.
  std::string name_;
  std::string opponent_name_ = "nobody";
  reheap::ActorRef opponent_;
  std::uint64_t serve_last_ = 0;
  std::uint64_t hits_ = 0;      // balls this player hit
  std::uint64_t last_hit_ = 0;  // the number of the last one
  std::uint64_t last_ = 0;
  bool serve_again_ = false;
};

// ---- main --------------------------------------------------------------------------------------

void print_stats(reheap::Runtime& rt, const char* name, reheap::ActorRef ref) {
  const reheap::ReactorStats s = rt.stats(ref);
  std::printf("  %-5s worker %d: %llu messages in, %llu out, %llu events, %.1f ms in handlers; "
              "heap %zu bytes live, %zu committed; mailbox high water %u\n",
              name, s.worker, static_cast<unsigned long long>(s.messages_in),
              static_cast<unsigned long long>(s.messages_out),
              static_cast<unsigned long long>(s.events), static_cast<double>(s.handler_ns) / 1e6,
              s.heap_live_bytes, s.heap_committed_bytes, s.queue_high_water);
}

reheap::SpawnOptions on_worker(int worker, const char* name) {
  reheap::SpawnOptions options;
  options.worker = worker;
  options.name = name;
  return options;
}

[[noreturn]] void usage(int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: ping_pong [--rounds N] [--snapshot FILE]\n"
               "       ping_pong --restore FILE\n");
  std::exit(status);
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  if (!reheap::reexec_without_aslr(argc, argv, &why)) {
    std::fprintf(stderr, "ping_pong: cannot turn ASLR off (%s); snapshots will not restore\n",
                 why.c_str());
  }

  std::uint64_t rounds = 10'000;
  const char* snapshot_file = nullptr;
  const char* restore_file = nullptr;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--rounds") == 0 && has_value) {
      rounds = std::strtoull(argv[++i], nullptr, 10);
      if (rounds == 0) usage(2);
    } else if (std::strcmp(argv[i], "--snapshot") == 0 && has_value) {
      snapshot_file = argv[++i];
    } else if (std::strcmp(argv[i], "--restore") == 0 && has_value) {
      restore_file = argv[++i];
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      usage(0);
    } else {
      usage(2);
    }
  }
  if (snapshot_file != nullptr && restore_file != nullptr) usage(2);

  reheap::Runtime rt(reheap::RuntimeConfig{.workers = 2});
  reheap::ActorRef pong;
  reheap::ActorRef ping;
  const auto start = std::chrono::steady_clock::now();
  if (restore_file == nullptr) {
    pong = rt.spawn<Player>(on_worker(1, "pong"), "pong");
    ping = rt.spawn<Player>(on_worker(0, "ping"), "ping", pong, 2 * rounds);
    std::printf("ping (worker 0) and pong (worker 1) play %llu round trips\n",
                static_cast<unsigned long long>(rounds));
  } else {
    // pong comes back under its old ActorRef, with its heap as it was; on_restored runs first.
    // A snapshot that cannot come back is an error to report, not a reason to abort.
    reheap::ReactorRestoreOptions options;
    options.worker = 1;
    try {
      pong = rt.restore(restore_file, options);
    } catch (const reheap::SnapshotError& e) {
      std::fprintf(stderr, "ping_pong: cannot restore pong (%s): %s\n", reheap::to_string(e.code()), e.what());
      if (e.code() == reheap::SnapshotErrc::kRangeInUse) {
        std::fprintf(stderr,
                     "ping_pong: the addresses pong's heap needs are taken in this process. Restore "
                     "before spawning reactors, and give each restart of a program the same state "
                     "directory (REHEAP_STATE_DIR=DIR): its new heaps then keep out of the way of the "
                     "snapshots it saved\n");
      }
      rt.shutdown();
      return 1;
    }
    ping = rt.spawn<Player>(on_worker(0, "ping"), "ping", pong);  // says hello, does not serve
  }

  if (snapshot_file != nullptr) {
    while (g_hits.load(std::memory_order_relaxed) < rounds &&
           g_final_hit.load(std::memory_order_acquire) == 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    try {
      const reheap::SnapshotInfo info = rt.snapshot(pong, snapshot_file);
      std::printf("snapshot of pong at about hit %llu: %s, %llu bytes, %llu pages\n",
                  static_cast<unsigned long long>(g_hits.load()), snapshot_file,
                  static_cast<unsigned long long>(info.bytes_written),
                  static_cast<unsigned long long>(info.pages_written));
    } catch (const reheap::SnapshotError& e) {
      // The game goes on without a snapshot (a full disk, a directory that does not exist).
      std::fprintf(stderr, "ping_pong: no snapshot of pong (%s): %s\n", reheap::to_string(e.code()), e.what());
    }
  }

  g_final_hit.wait(0, std::memory_order_acquire);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::uint64_t final_hit = g_final_hit.load();
  const std::uint64_t played = final_hit - g_resumed.load();  // the hits of this process
  std::printf("game over at hit %llu: %llu hits in this process in %.3f s, %.0f round trips/s\n",
              static_cast<unsigned long long>(final_hit), static_cast<unsigned long long>(played),
              seconds, static_cast<double>(played) / 2 / seconds);
  print_stats(rt, "ping", ping);
  print_stats(rt, "pong", pong);
  rt.shutdown();
  return 0;
}
