// What a caught exception says and what C++ type it is, for the test kit's failure reports
// (ReactorFailure, a replay's Divergence).
//
// A hook may throw anything: a std::exception (its dynamic type is the one reported:
// "std::out_of_range", not "std::exception"), or any other object ("int"). It allocates: call it
// with the system heap current, since what it returns outlives the reactor's event. Type names come
// from the runtime's type_name (runtime/src/reactor/type_name.h).
#pragma once

#include <string>
#include <typeinfo>

#include "reactor/type_name.h"  // runtime/src

namespace reheap::testing::detail {

using reheap::detail::type_name;

struct CaughtException {
  std::string type;  // the thrown object's C++ type, "" if not known
  std::string what;  // its what(), or a sentence saying it has none
};

// The exception being handled; call only inside a catch handler.
CaughtException caught_exception();

}  // namespace reheap::testing::detail
