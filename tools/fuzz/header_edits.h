// Semantic edits of a snapshot header: one field (or one entry of the chunk list) changed to a
// value chosen to break an assumption the loader might make: 0, 1, the type's maximum, off by
// one, another chunk's index, a neighbour, an address in another chunk or outside the zone.
//
// The edits work on the decoded tree (header_fields.h), so that a change of length (a bigger
// integer, a dropped chunk entry) still gives a well-formed msgpack header: what the loader then
// sees is a header that parses and lies, which is the case the checksums otherwise keep away.
#pragma once

#include <string>

#include "fuzz_rng.h"
#include "header_fields.h"

namespace reheap_fuzz {

// Applies one edit to `tree` and returns a description of it ("" if the tree offered nothing to
// edit). `g` is the geometry read from the tree before the edit.
std::string edit_header(HeaderTree& tree, const Geometry& g, FuzzRng& rng);

}  // namespace reheap_fuzz
