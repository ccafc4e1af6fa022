// examples/hello.cpp: a reactor that answers a greeting, run by a Runtime.
#include <reheap/runtime.h>

#include <cstdio>
#include <optional>
#include <string>

struct Greet { std::string name; MSGPACK_DEFINE(name) };       // encoded with msgpack
struct Greeting { std::string text; MSGPACK_DEFINE(text) };

// A reactor: it and everything its handlers allocate live in its own heap.
class Greeter : public reheap::Reactor {
 public:
  Greeter() { handle<&Greeter::on_greet>(); }                 // Greet messages go to on_greet
  void on_greet(const Greet& greet) {
    std::string text = "hello, ";
    text += greet.name;
    send(sender(), Greeting{text});                            // reply to whoever asked
  }
};

int main() {
  reheap::Runtime runtime;                                     // one worker thread per CPU
  reheap::ActorRef greeter = runtime.spawn<Greeter>();         // a heap, and the reactor in it
  std::optional<Greeting> reply = runtime.ask<Greeting>(greeter, Greet{"world"});
  if (!reply) return 1;
  std::printf("%s\n", reply->text.c_str());                    // hello, world
}
