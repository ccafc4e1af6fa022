// type_name (see type_name.h).
#include "reactor/type_name.h"

#include <cxxabi.h>

#include <cstdlib>

namespace reheap::detail {

std::string type_name(const std::type_info& type) {
  int status = 0;
  char* readable = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  if (status != 0 || readable == nullptr) return type.name();
  std::string name(readable);
  std::free(readable);
  return name;
}

}  // namespace reheap::detail
