// Runtime::ask from outside: the time one call takes, a request answered at once by a reactor,
// asked in a loop from main.
//
// usage: ask_bench [--calls N] [--rounds R] [--workers W]
// Prints the microseconds per call of each round and the worker wake-ups per call: with an idle
// runtime each call mostly waits for the asked reactor's worker to wake up (runtime.h, "ask").
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "reheap/runtime.h"

namespace {

struct Question {
  int n;
};
struct Answer {
  int n;
};

class Answerer : public reheap::Reactor {
 public:
  Answerer() { handle<&Answerer::on_question>(); }
  void on_question(const Question& q) { send(sender(), Answer{q.n + 1}); }
};

}  // namespace

int main(int argc, char** argv) {
  int calls = 20'000;
  int rounds = 5;
  int workers = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 < argc && arg == "--calls") {
      calls = std::atoi(argv[++i]);
    } else if (i + 1 < argc && arg == "--rounds") {
      rounds = std::atoi(argv[++i]);
    } else if (i + 1 < argc && arg == "--workers") {
      workers = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: ask_bench [--calls N] [--rounds R] [--workers W]\n");
      return 2;
    }
  }
  if (calls <= 0 || rounds <= 0 || workers <= 0) {
    std::fprintf(stderr, "ask_bench: --calls, --rounds and --workers must be positive\n");
    return 2;
  }
  reheap::Runtime rt(reheap::RuntimeConfig{.workers = workers});
  const reheap::ActorRef answerer = rt.spawn<Answerer>();
  for (int r = 0; r < rounds; ++r) {
    const std::uint64_t wakeups = rt.stats().wakeups;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) {
      const std::optional<Answer> a = rt.ask<Answer>(answerer, Question{i});
      if (!a || a->n != i + 1) {
        std::fprintf(stderr, "ask_bench: call %d got no right answer\n", i);
        return 1;
      }
    }
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / calls;
    std::printf("round %d: %.2f us per call, %.2f worker wake-ups per call\n", r + 1, us,
                static_cast<double>(rt.stats().wakeups - wakeups) / calls);
  }
  return 0;
}
