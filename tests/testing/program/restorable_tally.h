// The reactor of the REHEAP_RESTORABLE tests (restorable_test.cpp): a class every part of the
// test includes, constructed only by restorable_recorder, which records it. Its member functions
// are all inline, so that a program that never constructs a Tally holds no vtable for it, as a
// test that only replays a reactor does.
#pragma once

#include "reheap/reactor.h"

namespace restorable_test {

struct Add {
  int n;
};

class Tally : public reheap::Reactor {
 public:
  Tally() { handle<&Tally::on_add>(); }
  void on_add(const Add& add) { total_ += add.n; }
  int total() const noexcept { return total_; }

 private:
  int total_ = 0;
};

}  // namespace restorable_test
