// What a caught exception says and what C++ type it is, for the test kit's failure reports
// (ReactorFailure, a replay's Divergence).
//
// A hook may throw anything: a std::exception (its dynamic type is the one reported:
// "std::out_of_range", not "std::exception"), or any other object ("int"). Both functions allocate:
// call them with the system heap current, since what they return outlives the reactor's event.
#pragma once

#include <string>
#include <typeinfo>

namespace reheap::testing::detail {

// `type`'s name as the program's source spells it ("std::out_of_range"), or its mangled name if it
// cannot be demangled.
std::string type_name(const std::type_info& type);

struct CaughtException {
  std::string type;  // the thrown object's C++ type, "" if not known
  std::string what;  // its what(), or a sentence saying it has none
};

// The exception being handled; call only inside a catch handler.
CaughtException caught_exception();

}  // namespace reheap::testing::detail
