// A caught exception's text and type (see caught_exception.h).
#include "caught_exception.h"

#include <cxxabi.h>

#include <exception>


namespace reheap::testing::detail {

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
