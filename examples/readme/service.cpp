// examples/readme/service.cpp: a reactor service with typed messages, state in plain std
// containers, a periodic timer, and the time read through the runtime.
#include <reheap/runtime.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

using namespace std::chrono_literals;

struct Login { std::string user; MSGPACK_DEFINE(user) };      // encoded with msgpack
struct Count { std::size_t sessions; };                        // trivially copyable: sent as bytes

// Keeps who logged in during the last minute. The map lives in the reactor's heap.
class Sessions : public reheap::Reactor {
 public:
  Sessions() { handle<&Sessions::on_login>(); handle<&Sessions::on_count>(); }
  void on_start() override { start_timer(1s, 1s); }            // on_timer once a second
  void on_login(const Login& login) { last_seen_[login.user] = now(); }
  void on_count(const Count&) { send(sender(), Count{last_seen_.size()}); }
  void on_timer(reheap::TimerId) override {
    const auto cutoff = now() - 60s;                           // now() is fixed for the event
    std::erase_if(last_seen_, [&](const auto& session) { return session.second < cutoff; });
  }

 private:
  std::map<std::string, std::chrono::system_clock::time_point> last_seen_;
};

int main() {
  reheap::Runtime runtime;
  reheap::ActorRef sessions = runtime.spawn<Sessions>();
  for (const char* user : {"alice", "bob", "alice"}) runtime.send(sessions, Login{user});
  std::optional<Count> count = runtime.ask<Count>(sessions, Count{});  // after the logins
  std::printf("%zu sessions\n", count ? count->sessions : 0);
  return count && count->sessions == 2 ? 0 : 1;
}
