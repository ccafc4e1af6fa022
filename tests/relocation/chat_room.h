// The service under test: a chat room reactor whose heap points into the program every way a
// C++ program does - vtables (its own and its members'), std::function managers and invokers,
// message-handler thunks, a plain function pointer, string literals, a type_info, a static.
//
// It is compiled into three programs (tests/CMakeLists.txt): the service, a rebuild of it with
// an unrelated change (RELOC_UNRELATED_CHANGE: code and data added before everything here, so
// every address moves), and one whose classes changed (RELOC_CLASSES_CHANGED: a member class
// gains a virtual function and a function is renamed), plus the test binary itself.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include "reheap/reactor.h"

namespace reloc {

struct Member {
  virtual ~Member() = default;
  virtual std::string greet() const = 0;
#ifdef RELOC_CLASSES_CHANGED
  virtual int mood() const { return 0; }
#endif
};

struct Join {
  std::string name;
  bool bot = false;
  MSGPACK_DEFINE(name, bot)
};
struct Post {
  std::string from;
  std::string text;
  MSGPACK_DEFINE(from, text)
};
struct Report {
  int round = 0;
};

class Room final : public reheap::Reactor {
 public:
  Room();
  void on_join(const Join& join);
  void on_post(const Post& post);
  void on_report(const Report& report);

  // Everything the room knows, computed through its program pointers.
  std::string summary() const;

 private:
  std::vector<std::unique_ptr<Member>> members_;
  std::vector<std::function<std::string(const std::string&)>> filters_;
  std::map<std::string, long> posts_by_member_;
  const char* motto_;
  const std::type_info* member_type_;
  long (*score_)(long);
  const long* static_bonus_;
};

// What the last Report produced, for whoever waits outside the runtime (a test, the service's
// main). Copied into static storage: the room's strings live in its heap.
std::string wait_for_report(int round);

}  // namespace reloc
