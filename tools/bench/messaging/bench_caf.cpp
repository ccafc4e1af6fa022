// messaging_bench_caf: the messaging benchmarks on the C++ Actor Framework (CAF 0.17, Debian's
// libcaf-dev).
//
// CAF is used the way its manual shows: function-based event_based_actor / stateful_actor
// behaviors, `send` between actors, `spawn` from the actor system or from an actor, a handler's
// return value as the reply, `send_exit` / `quit` to stop, and `await_all_actors_done` in main.
// Messages are ordinary CAF messages of built-in types (atoms and std::uint64_t), which CAF
// allocates per message. One actor_system serves the whole process (warm-up and repetitions).
//
// Configuration, the only tuning applied: `scheduler.max-threads = 2`, because the machine has two
// cores (CAF's default would be the core count as well, but we set it so the benchmark does not
// depend on that). Everything else is CAF's default: the work-stealing scheduler
// (`scheduler.policy = stealing`), unlimited `scheduler.max-throughput`, the default polling and
// sleeping intervals of idle workers, no logging (the Debian build has logging compiled out).
//
// Where actors run is CAF's decision: the scheduler has no way to put an actor on a chosen
// thread, and an actor that sends to an idle actor queues the receiver on its own worker, where
// the other worker may steal it. So "two actors on different threads" is what we ask for and not
// always what happens; every test therefore also prints a NOTE line with the share of message
// hand-overs that did cross threads. `--detached` spawns the pingpong and oneway actors with
// `caf::detached` instead (CAF's documented way to give an actor a thread of its own), which
// does put them on different threads, each woken through a mutex and condition variable.
//
// The tests (what "n" counts is in messaging_bench.h):
//   pingpong  `ping` sends (ping, v) to `pong`, whose handler returns (pong, v) as the reply;
//             ping checks v and sends v + 1, n times. Clock: in ping, from its first send to the
//             n-th reply.
//   oneway    a sender actor sends (0, seq) for seq = 1..n in its initialization and stops; the
//             receiver checks the order and the sum and stops the clock at the n-th message.
//   fanin     S sender actors, spawned from main and so spread over the workers by CAF, each send
//             (sender, seq) for seq = 1..n/S; the receiver checks each sender's order and the
//             total. Clock: from before the first sender is spawned to the n-th message.
//   spawn     a spawner actor spawns actors in waves of 1,000; each one sends `done` to the
//             spawner when it starts and stops (its behavior is empty). The next wave starts when
//             the last `done` of the previous one has arrived. Clock: in main, from spawning the
//             spawner until await_all_actors_done returns, so every actor has stopped.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "caf/all.hpp"
#include "messaging_bench.h"

namespace cafbench {
namespace {

using msgbench::Clock;
using msgbench::fail;

using ping_atom = caf::atom_constant<caf::atom("ping")>;
using pong_atom = caf::atom_constant<caf::atom("pong")>;
using done_atom = caf::atom_constant<caf::atom("done")>;

constexpr std::uint64_t kSpawnWave = 1000;

unsigned long long ull(std::uint64_t v) { return static_cast<unsigned long long>(v); }

// ---- pingpong ----------------------------------------------------------------------------------

// Shared by ping and pong. They run strictly one after the other (each handler runs only after
// the other's message was enqueued), so plain fields need no synchronization.
struct PingPong {
  std::uint64_t n = 0;
  std::uint64_t replies = 0;
  Clock::time_point start, end;
  pthread_t last_thread{};
  std::uint64_t handlers = 0;
  std::uint64_t thread_changes = 0;  // handlers that ran on another thread than the one before

  void count_thread() noexcept {
    const pthread_t self = pthread_self();
    if (handlers++ > 0 && pthread_equal(self, last_thread) == 0) ++thread_changes;
    last_thread = self;
  }
};

caf::behavior pong(caf::event_based_actor*, PingPong* state) {
  return {
      [state](ping_atom, std::uint64_t v) {
        state->count_thread();
        return caf::make_message(pong_atom::value, v);
      },
  };
}

caf::behavior ping(caf::event_based_actor* self, caf::actor peer, PingPong* state) {
  state->start = Clock::now();
  state->count_thread();
  self->send(peer, ping_atom::value, std::uint64_t{1});
  return {
      [self, peer, state](pong_atom, std::uint64_t v) {
        state->count_thread();
        if (v != state->replies + 1) {
          fail("pingpong: reply %llu to ping %llu", ull(v), ull(state->replies + 1));
        }
        if (++state->replies == state->n) {
          state->end = Clock::now();
          self->send_exit(peer, caf::exit_reason::user_shutdown);
          self->quit();
          return;
        }
        self->send(peer, ping_atom::value, v + 1);
      },
  };
}

template <caf::spawn_options Options>
double run_pingpong(caf::actor_system& system, std::uint64_t n) {
  PingPong state;
  state.n = n;
  caf::actor pong_actor = system.spawn<Options>(pong, &state);
  system.spawn<Options>(ping, pong_actor, &state);
  pong_actor = nullptr;
  system.await_all_actors_done();
  if (state.replies != n) fail("pingpong: %llu round trips of %llu", ull(state.replies), ull(n));
  msgbench::note("thread_change_pct",
       100.0 * static_cast<double>(state.thread_changes) /
           static_cast<double>(std::max<std::uint64_t>(state.handlers - 1, 1)));
  return msgbench::seconds_between(state.start, state.end);
}

// ---- oneway and fanin --------------------------------------------------------------------------

// Written by each sender before its first send and read by the receiver, which handles a
// sender's messages only after they were enqueued, so after that write.
struct Stream {
  std::uint64_t n = 0;
  std::uint64_t per_sender = 0;
  std::vector<pthread_t> sender_thread;
  Clock::time_point start, end;
  std::uint64_t cross_thread = 0;  // set by the receiver when it is done
};

struct SinkState {
  std::vector<std::uint64_t> next_seq;
  std::uint64_t received = 0;
  std::uint64_t sum = 0;
  std::uint64_t cross_thread = 0;  // messages handled on another thread than their sender's
};

caf::behavior sink(caf::stateful_actor<SinkState>* self, Stream* stream) {
  self->state.next_seq.assign(stream->sender_thread.size(), 1);
  return {
      [self, stream](std::uint64_t sender, std::uint64_t seq) {
        SinkState& s = self->state;
        if (sender >= s.next_seq.size() || seq != s.next_seq[sender]) {
          fail("message %llu of sender %llu arrived out of order", ull(seq), ull(sender));
        }
        ++s.next_seq[sender];
        s.sum += seq;
        if (pthread_equal(pthread_self(), stream->sender_thread[sender]) == 0) ++s.cross_thread;
        if (++s.received == stream->n) {
          stream->end = Clock::now();
          const std::uint64_t senders = s.next_seq.size();
          if (s.sum != senders * msgbench::sum_1_to(stream->per_sender)) {
            fail("received %llu messages summing to %llu instead of %llu", ull(s.received),
                 ull(s.sum), ull(senders * msgbench::sum_1_to(stream->per_sender)));
          }
          stream->cross_thread = s.cross_thread;
          self->quit();
        }
      },
  };
}

void source(caf::event_based_actor* self, caf::actor receiver, Stream* stream,
            std::uint64_t sender) {
  stream->sender_thread[sender] = pthread_self();
  if (stream->sender_thread.size() == 1) stream->start = Clock::now();
  for (std::uint64_t seq = 1; seq <= stream->per_sender; ++seq) {
    self->send(receiver, sender, seq);
  }
}

template <caf::spawn_options Options>
double run_stream(caf::actor_system& system, std::uint64_t n, std::uint64_t senders) {
  Stream stream;
  stream.n = n;
  stream.per_sender = n / senders;
  stream.sender_thread.resize(senders);
  caf::actor receiver = system.spawn<Options>(sink, &stream);
  if (senders > 1) stream.start = Clock::now();
  for (std::uint64_t i = 0; i < senders; ++i) system.spawn<Options>(source, receiver, &stream, i);
  receiver = nullptr;
  system.await_all_actors_done();
  if (stream.end == Clock::time_point{}) fail("the receiver never got its last message");
  msgbench::note("cross_thread_pct",
                 100.0 * static_cast<double>(stream.cross_thread) / static_cast<double>(n));
  return msgbench::seconds_between(stream.start, stream.end);
}

// ---- spawn -------------------------------------------------------------------------------------

struct SpawnerState {
  std::uint64_t to_spawn = 0;
  std::uint64_t outstanding = 0;
};

void child(caf::event_based_actor* self, caf::actor parent) {
  self->send(parent, done_atom::value);
}  // no behavior: the actor stops right after this

void spawn_wave(caf::stateful_actor<SpawnerState>* self) {
  const std::uint64_t wave = std::min(kSpawnWave, self->state.to_spawn);
  self->state.to_spawn -= wave;
  self->state.outstanding = wave;
  const caf::actor parent = caf::actor_cast<caf::actor>(self);
  for (std::uint64_t i = 0; i < wave; ++i) self->spawn(child, parent);
}

caf::behavior spawner(caf::stateful_actor<SpawnerState>* self, std::uint64_t n,
                      std::uint64_t* done) {
  self->state.to_spawn = n;
  spawn_wave(self);
  return {
      [self, done](done_atom) {
        ++*done;
        if (--self->state.outstanding > 0) return;
        if (self->state.to_spawn > 0) {
          spawn_wave(self);
        } else {
          self->quit();
        }
      },
  };
}

double run_spawn(caf::actor_system& system, std::uint64_t n) {
  std::uint64_t done = 0;
  const Clock::time_point start = Clock::now();
  system.spawn(spawner, n, &done);
  system.await_all_actors_done();
  const Clock::time_point end = Clock::now();
  if (done != n) fail("spawn: %llu actors reported of %llu", ull(done), ull(n));
  return msgbench::seconds_between(start, end);
}

// ---- spawnmain ---------------------------------------------------------------------------------
// Main spawns the children itself (actor_system::spawn) in waves of 1,000; each sends `done` to a
// collector, which wakes main when a wave is complete. Clock: in main, from the first spawn until
// await_all_actors_done returns.

caf::behavior collector(caf::event_based_actor* self, std::uint64_t n, std::atomic<std::uint64_t>* done) {
  auto count = std::make_shared<std::uint64_t>(0);
  return {
      [self, n, done, count](done_atom) {
        const std::uint64_t c = ++*count;
        done->store(c, std::memory_order_release);
        if (c % kSpawnWave == 0 || c == n) done->notify_one();
        if (c == n) self->quit();
      },
  };
}

double run_spawn_main(caf::actor_system& system, std::uint64_t n) {
  std::atomic<std::uint64_t> done{0};
  const Clock::time_point start = Clock::now();
  const caf::actor sink = system.spawn(collector, n, &done);
  for (std::uint64_t spawned = 0; spawned < n;) {
    const std::uint64_t wave = std::min(kSpawnWave, n - spawned);
    for (std::uint64_t i = 0; i < wave; ++i) system.spawn(child, sink);
    spawned += wave;
    for (std::uint64_t d = done.load(std::memory_order_acquire); d < spawned; d = done.load(std::memory_order_acquire)) {
      done.wait(d, std::memory_order_acquire);
    }
  }
  system.await_all_actors_done();
  const Clock::time_point end = Clock::now();
  return msgbench::seconds_between(start, end);
}

}  // namespace
}  // namespace cafbench

int main(int argc, char** argv) {
  const bool detached = msgbench::take_flag(argc, argv, "--detached");
  const char* idle_text = msgbench::take_value(argc, argv, "--idle-cpu");
  const std::uint64_t idle_ms = idle_text != nullptr ? std::strtoull(idle_text, nullptr, 10) : 0;
  if (idle_text != nullptr && idle_ms == 0) {
    std::fprintf(stderr, "messaging_bench_caf: --idle-cpu wants milliseconds, not '%s'\n", idle_text);
    return 2;
  }
  // --idle-cpu MS stands for the test (messaging_bench.h).
  const char* idle_argv[] = {argv[0], "pingpong", nullptr};
  const msgbench::Options options = msgbench::parse_options(
      idle_text != nullptr ? 2 : argc, idle_text != nullptr ? const_cast<char**>(idle_argv) : argv,
      "caf",
      "caf options:\n"
      "  --detached  pingpong, oneway: spawn the actors with caf::detached (a thread each)\n"
      "  --idle-cpu MS  measure the CPU an idle actor system uses over MS ms (no test)\n");
  if (detached && options.test != msgbench::Test::pingpong &&
      options.test != msgbench::Test::oneway) {
    std::fprintf(stderr, "messaging_bench_caf: --detached applies to pingpong and oneway only\n");
    return 2;
  }

  caf::actor_system_config config;
  config.set("scheduler.max-threads", 2);
  caf::actor_system system{config};
  if (system.scheduler().num_workers() != 2) {
    msgbench::fail("the scheduler has %zu workers, not 2", system.scheduler().num_workers());
  }
  if (idle_text != nullptr) return msgbench::print_idle_cpu("caf", idle_ms);

  return msgbench::run(options, "caf", [&](msgbench::Test test, std::uint64_t n) {
    using cafbench::run_pingpong;
    using cafbench::run_stream;
    switch (test) {
      case msgbench::Test::pingpong:
        return msgbench::Seconds(detached ? run_pingpong<caf::detached>(system, n)
                                          : run_pingpong<caf::no_spawn_options>(system, n));
      case msgbench::Test::oneway:
        return msgbench::Seconds(detached ? run_stream<caf::detached>(system, n, 1)
                                          : run_stream<caf::no_spawn_options>(system, n, 1));
      case msgbench::Test::fanin:
        return msgbench::Seconds(
            run_stream<caf::no_spawn_options>(system, n, options.senders));
      case msgbench::Test::spawn:
        return msgbench::Seconds(cafbench::run_spawn(system, n));
      case msgbench::Test::spawnmain:
        return msgbench::Seconds(cafbench::run_spawn_main(system, n));
    }
    return msgbench::Seconds();
  });
}
