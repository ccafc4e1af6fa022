// A caught exception's text and type (see caught_exception.h).
#include "caught_exception.h"

#include <cxxabi.h>

#include <cstdlib>
#include <exception>

namespace reheap::testing::detail {

std::string type_name(const std::type_info& type) {
  int status = 0;
  char* readable = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string name = status == 0 && readable != nullptr ? readable : type.name();
  std::free(readable);
  return name;
}

CaughtException caught_exception() {
  // Rethrown to be caught by type: a rethrow copies nothing, the object stays where it was made.
  try {
    throw;
  } catch (const std::exception& x) {
    return {type_name(typeid(x)), x.what()};
  } catch (...) {
    const std::type_info* type = abi::__cxa_current_exception_type();
    return {type != nullptr ? type_name(*type) : "", "an exception not derived from std::exception"};
  }
}

}  // namespace reheap::testing::detail
