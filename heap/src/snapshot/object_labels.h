// How messages name a loaded object and its build: the layout check (program_layout.cpp, which
// defines them) and relocation's refusals (relocation.cpp) say the same thing the same way.
#pragma once

#include <string>

#include "reheap/program_layout.h"

namespace reheap::detail::snapshot {

// "the main executable NAME" for the main executable, the file name for a library.
std::string label_of(const LoadedObject& object);
// The first twelve hex digits of a build-id, or "none".
std::string short_id(const std::string& build_id);

}  // namespace reheap::detail::snapshot
