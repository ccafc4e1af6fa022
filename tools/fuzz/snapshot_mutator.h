// The snapshot fuzzer's mutator: what LLVMFuzzerCustomMutator does with an input.
//
// libFuzzer's byte mutations alone almost never get past the file's checksums, and resealing
// them afterwards mostly yields headers that no longer parse and pages the loader never looks
// at. The inputs that matter are files whose checksums are right and whose allocator state lies,
// so most mutants are semantic edits (header_edits.h, state_edits.h), resealed:
//
//   10%  libFuzzer's byte mutation, not resealed     (the checksum checks themselves)
//   20%  libFuzzer's byte mutation, resealed          (structure: records, lengths, msgpack)
//   20%  a header field edit, sometimes with a state edit, resealed
//   50%  one to three allocator-state edits in the pages, sometimes with a header edit, resealed
//
// An input whose header no longer decodes gets byte mutations only, or, three times in four, is
// replaced by one of the restart points (the seeds) before a semantic edit.
//
// Each mutant comes with a one-line description of what was done, so that a crash can be traced
// to the edit that caused it (the fuzz target records it with the input, black_box.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace reheap_fuzz {

// libFuzzer's own byte mutator (LLVMFuzzerMutate), passed in so that this file does not depend
// on being linked into a fuzzer.
using ByteMutator = std::size_t (*)(std::uint8_t* data, std::size_t size, std::size_t max_size);

// Mutates `data` (an input of `size` bytes in a buffer of `max_size`) and returns the new size.
// `description` says what was done.
std::size_t mutate_snapshot(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed,
                            ByteMutator byte_mutator, std::string& description);

// Valid snapshots to start again from when an input's header no longer decodes (see
// mutate_snapshot). Empty by default.
void set_restart_points(std::vector<std::vector<std::uint8_t>> seeds);

// Recomputes the checksums of a snapshot in place, reading the page size from its header.
void reseal_snapshot(std::uint8_t* data, std::size_t size);

}  // namespace reheap_fuzz
