// Hostile snapshots for regression replay: valid checksums, lying allocator state.
//
// Each input is the "rich" seed (seed_heaps.h) with one lie told through the semantic editor
// (state_edits.h) and every checksum resealed, so that the reader accepts the file and the lie
// reaches restore, the restored heap and its destruction. They are rebuilt by every fuzz run
// (the zone and layout must match the binary that replays them) and replayed before fuzzing
// (tools/fuzz.sh). The targets are found by value, not by field offset: the state words that
// hold a given chunk's address, the header's committed bytes, a free block's address; so the
// generator keeps working when the allocator's structs are reordered, and says so loudly when a
// seed no longer has the shape an input needs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "seed_heaps.h"

namespace reheap_fuzz {

struct HostileInput {
  std::string name;  // file name stem, e.g. "a-large-list-head-unlisted"
  std::string lie;   // one sentence: what the file claims
  std::vector<std::uint8_t> bytes;
};

// Builds the inputs from `seeds`. Throws std::runtime_error naming the input and the missing
// fact when a seed no longer supports one.
std::vector<HostileInput> build_hostile_inputs(const std::vector<Seed>& seeds);

}  // namespace reheap_fuzz
