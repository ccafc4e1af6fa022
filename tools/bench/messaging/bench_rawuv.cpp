// messaging_bench_rawuv: the raw libuv bound of the messaging benchmarks.
//
// No runtime and no actors: two threads, each running its own uv loop; each loop has an
// MpscInbox (mpsc_inbox.h) and one uv_async_t. Sending is "push the message onto the receiving
// loop's inbox, and call uv_async_send on it if the inbox was empty"; the async callback drains
// the inbox in batches until it finds it empty. That is the least any runtime built on libuv
// must do to move a message from one loop thread to another, so it bounds what reheap's
// messaging can reach on the same machine.
//
// Messages are 16-byte structs {next, value}. By default they are preallocated: each test takes
// them from an array allocated and written before the clock starts, and nobody frees them one by
// one, so the bound does not measure an allocator. `--malloc` instead mallocs every message on
// the sending thread and frees it on the receiving one (glibc malloc), for comparison.
//
// Threads are not pinned (neither are CAF's workers, nor reheap's loop threads); `--pin` pins
// loop 0 to the first CPU this process may use and loop 1 to the second, for comparison.
//
// The tests (what "n" counts is in messaging_bench.h):
//   pingpong  loop 0 sends value v to loop 1, which sends it back; loop 0 checks it and sends
//             v + 1, n times. The clock runs on loop 0 from the first send to the last reply.
//   oneway    loop 0 sends 1..n in one callback; loop 1 checks that they arrive in order and
//             stops the clock at the n-th (the clock starts on loop 0 before the first send).
//   fanin     loop 0 hosts S logical producers that take turns, one message each, pushing
//             (producer, seq) for seq = 1..n/S; loop 1 checks each producer's sequence and the
//             total. Same clock as oneway.
//   spawn     not applicable (there are no actors): prints n/a.
#include <pthread.h>
#include <sched.h>
#include <uv.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include "messaging_bench.h"
#include "mpsc_inbox.h"

namespace rawuv {
namespace {

using msgbench::Clock;
using msgbench::fail;

struct Message {
  Message* next;
  std::uint64_t value;  // 0 is the control message (start/stop); payloads are never 0
};
static_assert(sizeof(Message) == 16);

constexpr std::uint64_t kControl = 0;

// Where a test's messages come from: a preallocated array, or malloc/free per message.
class MessageSource {
 public:
  MessageSource(bool use_malloc, std::uint64_t capacity) : use_malloc_(use_malloc) {
    if (!use_malloc_) {
      // Value-initialized: every page is written here, before any clock starts.
      pool_ = std::make_unique<Message[]>(capacity);
      capacity_ = capacity;
    }
  }

  Message* make(std::uint64_t value) noexcept {
    Message* m;
    if (use_malloc_) {
      m = static_cast<Message*>(std::malloc(sizeof(Message)));
      if (m == nullptr) fail("out of memory");
    } else {
      if (used_ == capacity_) fail("message pool of %llu exhausted",
                                   static_cast<unsigned long long>(capacity_));
      m = &pool_[used_++];
    }
    m->value = value;
    return m;
  }

  // Called by the receiver when it is done with a message from this source.
  void release(Message* m) const noexcept {
    if (use_malloc_) std::free(m);
  }

 private:
  bool use_malloc_;
  std::unique_ptr<Message[]> pool_;
  std::uint64_t capacity_ = 0;
  std::uint64_t used_ = 0;
};

struct Settings {
  bool use_malloc = false;
  bool pin = false;
};

// One thread running one uv loop whose async handle drains an inbox into `Handler`, an object
// with `void on_message(Loop&, Message*)`. The handler stops its loop with close().
template <class Handler>
class Loop {
 public:
  explicit Loop(Handler& handler) : handler_(handler) {}
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  // Starts the thread; returns once the loop can receive messages.
  void start(int cpu) {
    std::latch ready(1);
    thread_ = std::thread([this, cpu, &ready] { run(cpu, ready); });
    ready.wait();
  }

  void join() { thread_.join(); }

  // Any thread: hands `m` to this loop, waking it if its inbox was empty.
  void deliver(Message* m) noexcept {
    if (inbox_.push(m)) uv_async_send(&async_);
  }

  // This loop's thread only: lets uv_run return once the current batch is done.
  void close() noexcept { uv_close(reinterpret_cast<uv_handle_t*>(&async_), nullptr); }

 private:
  void run(int cpu, std::latch& ready) {
    if (cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) fail("cannot pin");
    }
    if (uv_loop_init(&loop_) != 0) fail("uv_loop_init");
    if (uv_async_init(&loop_, &async_, &Loop::on_async) != 0) fail("uv_async_init");
    async_.data = this;
    ready.count_down();
    uv_run(&loop_, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop_) != 0) fail("uv_loop_close: handles left open");
  }

  // Drains the inbox until it is empty: messages pushed while a batch is handled are taken in
  // the same callback, without going back to epoll.
  static void on_async(uv_async_t* async) {
    Loop& self = *static_cast<Loop*>(async->data);
    while (Message* m = self.inbox_.take_all()) {
      do {
        Message* const next = m->next;  // the handler may hand `m` on
        self.handler_.on_message(self, m);
        m = next;
      } while (m != nullptr);
    }
  }

  Handler& handler_;
  MpscInbox<Message> inbox_;
  uv_loop_t loop_{};
  uv_async_t async_{};
  std::thread thread_;
};

// The CPUs this process may run on, in order; --pin uses the first two.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// Runs a two-loop test: `Sender` on loop 0 (started by a control message), `Receiver` on loop 1.
template <class Sender, class Receiver>
void run_pair(const Settings& settings, Sender& sender, Receiver& receiver) {
  int cpu0 = -1;
  int cpu1 = -1;
  if (settings.pin) {
    const std::vector<int> cpus = allowed_cpus();
    if (cpus.size() < 2) fail("--pin needs two CPUs");
    cpu0 = cpus[0];
    cpu1 = cpus[1];
  }
  Loop<Sender> loop0(sender);
  Loop<Receiver> loop1(receiver);
  sender.peer = &loop1;
  receiver.peer = &loop0;
  loop1.start(cpu1);
  loop0.start(cpu0);
  Message start{nullptr, kControl};
  loop0.deliver(&start);
  loop0.join();
  loop1.join();
}

// ---- pingpong ----------------------------------------------------------------------------------

struct PongLoop;

struct PingLoop {
  Loop<PongLoop>* peer = nullptr;
  MessageSource* pings = nullptr;
  const MessageSource* pongs = nullptr;
  Message* stop = nullptr;
  std::uint64_t n = 0;
  std::uint64_t sent = 0;
  Clock::time_point start, end;

  void on_message(Loop<PingLoop>& self, Message* m);
};

struct PongLoop {
  Loop<PingLoop>* peer = nullptr;
  MessageSource* pongs = nullptr;
  const MessageSource* pings = nullptr;

  void on_message(Loop<PongLoop>& self, Message* m) {
    if (m->value == kControl) {
      self.close();
      return;
    }
    const std::uint64_t value = m->value;
    pings->release(m);
    peer->deliver(pongs->make(value));
  }
};

void PingLoop::on_message(Loop<PingLoop>& self, Message* m) {
  if (m->value == kControl) {  // the start
    start = Clock::now();
  } else {
    if (m->value != sent) {
      fail("pingpong: reply %llu to ping %llu", static_cast<unsigned long long>(m->value),
           static_cast<unsigned long long>(sent));
    }
    pongs->release(m);
    if (sent == n) {
      end = Clock::now();
      peer->deliver(stop);
      self.close();
      return;
    }
  }
  peer->deliver(pings->make(++sent));
}

double pingpong(const Settings& settings, std::uint64_t n) {
  MessageSource pings(settings.use_malloc, n);
  MessageSource pongs(settings.use_malloc, n);
  Message stop{nullptr, kControl};
  PingLoop ping;
  ping.pings = &pings;
  ping.pongs = &pongs;
  ping.stop = &stop;
  ping.n = n;
  PongLoop pong;
  pong.pongs = &pongs;
  pong.pings = &pings;
  run_pair(settings, ping, pong);
  if (ping.sent != n) fail("pingpong: %llu round trips instead of %llu",
                           static_cast<unsigned long long>(ping.sent),
                           static_cast<unsigned long long>(n));
  return msgbench::seconds_between(ping.start, ping.end);
}

// ---- oneway and fanin --------------------------------------------------------------------------

// The receiver of oneway and fanin. A message's value is (producer << kSeqBits) | seq with seq
// counting from 1 for each producer; oneway has one producer, 0.
constexpr unsigned kSeqBits = 40;

struct SourceLoop;

struct SinkLoop {
  Loop<SourceLoop>* peer = nullptr;
  const MessageSource* messages = nullptr;
  std::uint64_t n = 0;
  std::vector<std::uint64_t> next_seq;  // per producer
  std::uint64_t received = 0;
  std::uint64_t sum = 0;
  Clock::time_point end;

  void on_message(Loop<SinkLoop>& self, Message* m) {
    const std::uint64_t value = m->value;
    messages->release(m);
    const std::uint64_t producer = value >> kSeqBits;
    const std::uint64_t seq = value & ((std::uint64_t{1} << kSeqBits) - 1);
    if (producer >= next_seq.size() || seq != next_seq[producer]) {
      fail("message %llu of producer %llu arrived out of order (expected %llu)",
           static_cast<unsigned long long>(seq), static_cast<unsigned long long>(producer),
           producer < next_seq.size() ? static_cast<unsigned long long>(next_seq[producer]) : 0);
    }
    ++next_seq[producer];
    sum += seq;
    if (++received == n) {
      end = Clock::now();
      self.close();
    }
  }
};

struct SourceLoop {
  Loop<SinkLoop>* peer = nullptr;
  MessageSource* messages = nullptr;
  std::uint64_t producers = 1;
  std::uint64_t per_producer = 0;
  Clock::time_point start;

  // The only message it gets is the start: it sends everything, round-robin over the producers,
  // and closes its loop.
  void on_message(Loop<SourceLoop>& self, Message*) {
    start = Clock::now();
    for (std::uint64_t seq = 1; seq <= per_producer; ++seq) {
      for (std::uint64_t p = 0; p < producers; ++p) {
        peer->deliver(messages->make((p << kSeqBits) | seq));
      }
    }
    self.close();
  }
};

double stream(const Settings& settings, std::uint64_t n, std::uint64_t producers) {
  if (producers >= (std::uint64_t{1} << (63 - kSeqBits)) ||
      n / producers >= (std::uint64_t{1} << kSeqBits)) {
    fail("too many producers or messages for the message encoding");
  }
  MessageSource messages(settings.use_malloc, n);
  SourceLoop source;
  source.messages = &messages;
  source.producers = producers;
  source.per_producer = n / producers;
  SinkLoop sink;
  sink.messages = &messages;
  sink.n = n;
  sink.next_seq.assign(producers, 1);
  run_pair(settings, source, sink);
  const std::uint64_t per = n / producers;
  if (sink.received != n || sink.sum != producers * msgbench::sum_1_to(per)) {
    fail("received %llu messages summing to %llu; sent %llu summing to %llu",
         static_cast<unsigned long long>(sink.received), static_cast<unsigned long long>(sink.sum),
         static_cast<unsigned long long>(n),
         static_cast<unsigned long long>(producers * msgbench::sum_1_to(per)));
  }
  return msgbench::seconds_between(source.start, sink.end);
}

}  // namespace
}  // namespace rawuv

int main(int argc, char** argv) {
  rawuv::Settings settings;
  settings.use_malloc = msgbench::take_flag(argc, argv, "--malloc");
  settings.pin = msgbench::take_flag(argc, argv, "--pin");
  const msgbench::Options options = msgbench::parse_options(
      argc, argv, "rawuv",
      "rawuv options:\n"
      "  --malloc  malloc each message on the sender, free it on the receiver\n"
      "            (default: messages preallocated before the clock starts)\n"
      "  --pin     pin the two loop threads to the first two allowed CPUs (default: unpinned)\n");
  return msgbench::run(options, "rawuv", [&](msgbench::Test test, std::uint64_t n) {
    switch (test) {
      case msgbench::Test::pingpong:
        return msgbench::Seconds(rawuv::pingpong(settings, n));
      case msgbench::Test::oneway:
        return msgbench::Seconds(rawuv::stream(settings, n, 1));
      case msgbench::Test::fanin:
        return msgbench::Seconds(rawuv::stream(settings, n, options.senders));
      case msgbench::Test::spawn:
      case msgbench::Test::spawnmain:
        break;
    }
    return msgbench::Seconds();  // spawn: there are no actors to spawn
  });
}
