// type_clash_test.cpp and type_clash_other.cpp: two files that each define a message type `Clash`
// in an anonymous namespace. What the second file does with its own `Clash`.
#pragma once

#include <stdexcept>
#include <string>

#include "reheap/runtime.h"

namespace reheap::clashtest {

// Builds a reactor that handles the other file's Clash; the text of the logic_error it threw,
// or "" when it did not throw.
std::string register_other_clash_handler();

// Sends the other file's Clash to `to`.
SendResult send_other_clash(Runtime& rt, ActorRef to);

}  // namespace reheap::clashtest
