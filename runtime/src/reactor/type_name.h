// The C++ name of a type, for reports ("chat::Room", "std::out_of_range").
#pragma once

#include <string>
#include <typeinfo>

namespace reheap::detail {

// The demangled name of `type`, or its mangled one if it does not demangle. Allocates in the heap
// current when called: make none current first (HeapScope system(nullptr)) inside a reactor.
std::string type_name(const std::type_info& type);

}  // namespace reheap::detail
