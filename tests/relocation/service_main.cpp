// The chat service as its users run it, in the modes the relocation tests need. ASLR stays on.
//
//   <program> save DIR      run a room, write DIR/room.snap and what its report said to
//                           DIR/expected.txt
//   <program> restore DIR   restore DIR/room.snap, check that the room reports what
//                           expected.txt says, let it take more input, print "OK <report>"
// Exit 0 on success, 1 with the reason on stderr otherwise.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "chat_room.h"
#include "reheap/runtime.h"

#ifdef RELOC_UNRELATED_CHANGE
long reloc_unrelated_use();
#endif

namespace {

int save(const std::string& dir) {
  reheap::Runtime rt;
  const reheap::ActorRef room = rt.spawn<reloc::Room>();
  rt.send(room, reloc::Join{"alice", false});
  rt.send(room, reloc::Join{"r2", true});
  rt.send(room, reloc::Post{"alice", "hi"});
  rt.send(room, reloc::Post{"alice", "anyone?"});
  rt.send(room, reloc::Report{1});
  const std::string report = reloc::wait_for_report(1);
  rt.snapshot(room, dir + "/room.snap");
  std::ofstream(dir + "/expected.txt") << report;
  std::printf("saved: %s\n", report.c_str());
  return 0;
}

int restore(const std::string& dir) {
  std::stringstream expected;
  expected << std::ifstream(dir + "/expected.txt").rdbuf();
  reheap::Runtime rt;
  const reheap::ActorRef room = rt.restore(dir + "/room.snap");
  rt.send(room, reloc::Report{2});
  const std::string report = reloc::wait_for_report(2);
  if (report != expected.str()) {
    std::fprintf(stderr, "the restored room reports\n  %s\ninstead of\n  %s\n", report.c_str(),
                 expected.str().c_str());
    return 1;
  }
  rt.send(room, reloc::Join{"bob", false});
  rt.send(room, reloc::Post{"bob", "back"});
  rt.send(room, reloc::Report{3});
  std::printf("OK %s\n", reloc::wait_for_report(3).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef RELOC_UNRELATED_CHANGE
  if (argc == 99) return static_cast<int>(reloc_unrelated_use());
#endif
  if (argc != 3 || (std::strcmp(argv[1], "save") != 0 && std::strcmp(argv[1], "restore") != 0)) {
    std::fprintf(stderr, "usage: %s save|restore DIR\n", argv[0]);
    return 2;
  }
  try {
    return std::strcmp(argv[1], "save") == 0 ? save(argv[2]) : restore(argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
