// Reactor::request against hand-written request ids over send: round trips per second between a
// client reactor on worker 0 and a server reactor on worker 1, both ways measured in one run.
//
// usage: request_bench [--trips N] [--rounds R] [--inflight K]
// Each round makes N round trips with K requests in flight (a continuation sends the next one),
// first with request/reply (a request id in the envelope, a timer per request for its timeout, a
// table of pending requests in the client's heap), then by hand (an id in the payload, matched in
// the client's own table, no timeout). Prints, per way, the median rate and the spread over the
// rounds, wall-clock and CPU time (the process's, both workers), and the ratio of the medians.
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "reheap/runtime.h"

namespace {

using namespace std::chrono_literals;

struct Question {
  std::uint64_t n;
};
struct Answer {
  std::uint64_t n;
};
// By hand: the id travels in the payload.
struct IdQuestion {
  std::uint64_t id;
  std::uint64_t n;
};
struct IdAnswer {
  std::uint64_t id;
  std::uint64_t n;
};
struct Start {
  std::uint64_t server;
  std::uint64_t trips;
  std::uint32_t inflight;
};

// Process memory the client reports to; the bench's reactors are never snapshotted.
struct Done {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  void signal() {
    std::lock_guard lock(mutex);
    done = true;
    cv.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return done; });
    done = false;
  }
};

class Server : public reheap::Reactor {
 public:
  Server() {
    handle<&Server::on_question>();
    handle<&Server::on_id_question>();
  }
  void on_question(const Question& q) { reply(Answer{q.n + 1}); }
  void on_id_question(const IdQuestion& q) { send(sender(), IdAnswer{q.id, q.n + 1}); }
};

class RequestClient : public reheap::Reactor {
 public:
  explicit RequestClient(Done* done) : done_(done) { handle<&RequestClient::on_start_run>(); }
  void on_start_run(const Start& s) {
    server_ = reheap::ActorRef(s.server);
    left_ = s.trips;
    total_ = s.trips;
    answered_ = 0;
    for (std::uint32_t i = 0; i < s.inflight && left_ > 0; ++i) ask();
  }
  void on_answer(const reheap::Response<Answer>& r) {
    if (!r.ok()) std::abort();  // the bench's requests are always answered
    if (++answered_ == total_) {
      done_->signal();
      return;
    }
    if (left_ > 0) ask();
  }

 private:
  void ask() {
    --left_;
    request<&RequestClient::on_answer>(server_, Question{left_}, 10s);
  }
  Done* done_;
  reheap::ActorRef server_{};
  std::uint64_t left_ = 0;
  std::uint64_t answered_ = 0;
  std::uint64_t total_ = 0;
};

// The same by hand: ids minted by the client, pending ones kept in a hash map with what the
// continuation would need (here, the question's n).
class IdClient : public reheap::Reactor {
 public:
  explicit IdClient(Done* done) : done_(done) {
    handle<&IdClient::on_start_run>();
    handle<&IdClient::on_answer>();
  }
  void on_start_run(const Start& s) {
    server_ = reheap::ActorRef(s.server);
    left_ = s.trips;
    total_ = s.trips;
    answered_ = 0;
    for (std::uint32_t i = 0; i < s.inflight && left_ > 0; ++i) ask();
  }
  void on_answer(const IdAnswer& a) {
    const auto it = pending_.find(a.id);
    if (it == pending_.end() || it->second + 1 != a.n) std::abort();
    pending_.erase(it);
    if (++answered_ == total_) {
      done_->signal();
      return;
    }
    if (left_ > 0) ask();
  }

 private:
  void ask() {
    --left_;
    const std::uint64_t id = next_id_++;
    pending_.emplace(id, left_);
    send(server_, IdQuestion{id, left_});
  }
  Done* done_;
  reheap::ActorRef server_{};
  std::uint64_t left_ = 0;
  std::uint64_t answered_ = 0;
  std::uint64_t total_ = 0;
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, std::uint64_t> pending_;
};

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct Sample {
  double wall_rate;  // round trips per wall-clock second
  double cpu_rate;   // round trips per CPU second of the process
};

Sample run_round(reheap::Runtime& rt, reheap::ActorRef client, reheap::ActorRef server, Done& done,
                 std::uint64_t trips, std::uint32_t inflight) {
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  rt.send(client, Start{server.value(), trips, inflight});
  done.wait();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = cpu_seconds() - cpu0;
  return Sample{static_cast<double>(trips) / wall, static_cast<double>(trips) / cpu};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void print(const char* name, const std::vector<Sample>& samples) {
  std::vector<double> wall;
  std::vector<double> cpu;
  for (const Sample& s : samples) {
    wall.push_back(s.wall_rate);
    cpu.push_back(s.cpu_rate);
  }
  std::printf("%-22s wall %10.0f trips/s (min %.0f, max %.0f)   cpu %10.0f trips/cpu-s (min %.0f, max %.0f)\n",
              name, median(wall), *std::min_element(wall.begin(), wall.end()),
              *std::max_element(wall.begin(), wall.end()), median(cpu),
              *std::min_element(cpu.begin(), cpu.end()), *std::max_element(cpu.begin(), cpu.end()));
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t trips = 200'000;
  int rounds = 5;
  std::uint32_t inflight = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 < argc && arg == "--trips") {
      trips = std::strtoull(argv[++i], nullptr, 10);
    } else if (i + 1 < argc && arg == "--rounds") {
      rounds = std::atoi(argv[++i]);
    } else if (i + 1 < argc && arg == "--inflight") {
      inflight = static_cast<std::uint32_t>(std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: request_bench [--trips N] [--rounds R] [--inflight K]\n");
      return 2;
    }
  }
  if (trips == 0 || rounds <= 0 || inflight == 0) {
    std::fprintf(stderr, "request_bench: --trips, --rounds and --inflight must be positive\n");
    return 2;
  }
  std::printf("request_bench: %llu round trips x %d rounds, %u in flight, client on worker 0, "
              "server on worker 1, %u CPUs\n",
              static_cast<unsigned long long>(trips), rounds, inflight,
              std::thread::hardware_concurrency());
  reheap::Runtime rt(reheap::RuntimeConfig{.workers = 2, .placement = reheap::Placement::kFixed});
  reheap::SpawnOptions on0;
  on0.worker = 0;
  reheap::SpawnOptions on1;
  on1.worker = 1;
  Done done;
  const reheap::ActorRef server = rt.spawn<Server>(on1);
  const reheap::ActorRef request_client = rt.spawn<RequestClient>(on0, &done);
  const reheap::ActorRef id_client = rt.spawn<IdClient>(on0, &done);
  std::vector<Sample> by_request;
  std::vector<Sample> by_hand;
  // Alternated round by round, so that a slow spell of the machine hits both ways alike.
  for (int r = 0; r < rounds; ++r) {
    by_request.push_back(run_round(rt, request_client, server, done, trips, inflight));
    by_hand.push_back(run_round(rt, id_client, server, done, trips, inflight));
  }
  print("request/reply", by_request);
  print("hand-written ids", by_hand);
  std::vector<double> wall_ratio;
  std::vector<double> cpu_ratio;
  for (int r = 0; r < rounds; ++r) {
    wall_ratio.push_back(by_request[r].wall_rate / by_hand[r].wall_rate);
    cpu_ratio.push_back(by_request[r].cpu_rate / by_hand[r].cpu_rate);
  }
  std::printf("ratio request/hand     wall %.3f   cpu %.3f (medians of the per-round ratios)\n",
              median(wall_ratio), median(cpu_ratio));
  return 0;
}
