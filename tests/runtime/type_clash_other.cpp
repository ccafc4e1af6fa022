// The other file of type_clash_test.cpp: a message type and a reactor whose names, written in an
// anonymous namespace, are the same as that file's (so their type ids are the same hash).
#include "type_clash_support.h"

namespace reheap {
namespace {

struct Clash {  // same name as type_clash_test.cpp's Clash, another type
  std::uint32_t a;
  std::uint32_t b;
};

class OtherClashSink : public Reactor {
 public:
  OtherClashSink() { handle<&OtherClashSink::on_clash>(); }
  void on_clash(const Clash&) {}
};

}  // namespace

namespace clashtest {

std::string register_other_clash_handler() {
  try {
    OtherClashSink sink;
    return "";
  } catch (const std::logic_error& e) {
    return e.what();
  }
}

SendResult send_other_clash(Runtime& rt, ActorRef to) { return rt.send(to, Clash{1, 2}); }

}  // namespace clashtest
}  // namespace reheap
