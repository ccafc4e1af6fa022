// The chat room (see chat_room.h).
#include "chat_room.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>

#ifdef RELOC_UNRELATED_CHANGE
// An unrelated change: code, data and literals that come before the room's in the binary.
namespace unrelated {
volatile long table[512] = {1, 2, 3};
__attribute__((noinline)) long busy(long x) {
  for (int i = 0; i < 64; ++i) x = x * 31 + table[i % 512];
  return x;
}
const char* banner() { return "an unrelated feature that moved every address of the build"; }
long use() { return busy(static_cast<long>(std::strlen(banner()))); }
}  // namespace unrelated
#endif

namespace reloc {
namespace {

struct Human final : Member {
  explicit Human(std::string n) : name(std::move(n)) {}
  std::string greet() const override { return "hello from " + name; }
  std::string name;
};

struct Bot final : Member {
  explicit Bot(std::string n) : name(std::move(n)) {}
  std::string greet() const override { return "beep from " + name; }
  std::string name;
};

const long kBonus = 1000;

#ifdef RELOC_CLASSES_CHANGED
long score_renamed(long posts) { return posts * 10 + 7; }
#define RELOC_SCORE score_renamed
#elif defined(RELOC_CODE_CHANGED)
// The same function with other code, as a rebuild with other inlining or a fixed bug gives it:
// its size changes, not what the heap's pointer to it means.
long score(long posts) {
  if (posts == 123456789) std::fprintf(stderr, "score: a count this test never reaches\n");
  return posts * 10 + 7;
}
#define RELOC_SCORE score
#else
long score(long posts) { return posts * 10 + 7; }
#define RELOC_SCORE score
#endif

std::mutex g_mutex;
std::condition_variable g_reported;
int g_round = -1;
char g_text[8192];

void publish(int round, const std::string& text) {
  std::lock_guard lock(g_mutex);
  const std::size_t n = std::min(text.size(), sizeof g_text - 1);
  std::memcpy(g_text, text.data(), n);
  g_text[n] = '\0';
  g_round = round;
  g_reported.notify_all();
}

}  // namespace

Room::Room()
    : motto_("rooms survive rebuilds"), member_type_(&typeid(Human)), score_(&RELOC_SCORE), static_bonus_(&kBonus) {
  handle<&Room::on_join>();
  handle<&Room::on_post>();
  handle<&Room::on_report>();
  const std::string shout = "!";
  filters_.push_back([](const std::string& s) { return s.empty() ? s : std::string(1, s[0]) + "*" + s.substr(1); });
  filters_.push_back([shout](const std::string& s) { return s + shout; });
}

void Room::on_join(const Join& join) {
  if (join.bot) {
    members_.push_back(std::make_unique<Bot>(join.name));
  } else {
    members_.push_back(std::make_unique<Human>(join.name));
  }
}

void Room::on_post(const Post& post) {
  ++posts_by_member_[post.from];
}

std::string Room::summary() const {
  std::string out = std::string(motto_) + ";";
  for (const auto& m : members_) {
    std::string line = m->greet();
    for (const auto& f : filters_) line = f(line);
    const long posts = posts_by_member_.count(line) ? posts_by_member_.at(line) : 0;
    out += " " + line + "=" + std::to_string(score_(posts));
    out += typeid(*m) == *member_type_ ? "(human)" : "(bot)";
  }
  for (const auto& [who, n] : posts_by_member_) out += " " + who + ":" + std::to_string(score_(n) + *static_bonus_);
  return out;
}

void Room::on_report(const Report& report) {
  publish(report.round, summary());
}

std::string wait_for_report(int round) {
  std::unique_lock lock(g_mutex);
  if (!g_reported.wait_for(lock, std::chrono::seconds(20), [&] { return g_round >= round; })) {
    return "(no report within 20 s)";
  }
  return g_text;
}

}  // namespace reloc

#ifdef RELOC_UNRELATED_CHANGE
long reloc_unrelated_use() { return unrelated::use(); }
#endif
