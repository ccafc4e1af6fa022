// Real crash bundles for the tests of `reheap-snap replay` and of a bundle's reading, and the
// means to damage them: recorded by tests/testing/program/replay_program.cpp in another process,
// copied, then cut, rewritten or replaced file by file.
//
// The log's layout (RECORDING_FORMAT.md) is read here only as far as cutting at block boundaries
// needs: the header's length at byte 12, then blocks of a 28-byte header whose body length is at
// byte 16 of it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "bounded_process.h"

namespace replay_test {

// Records a bundle under `directory` with replay_program (REPLAY_PROGRAM_NOTES=`notes`, plus
// `env`) and returns its path ("" with a test failure if none was written).
std::filesystem::path record_bundle(const std::filesystem::path& directory, unsigned notes = 0,
                                    const std::vector<std::string>& env = {});

// A copy of the bundle `from` at `to` (which must not exist).
void copy_bundle(const std::filesystem::path& from, const std::filesystem::path& to);

// The bundle's log segment (its only log-*.rlog).
std::filesystem::path log_of(const std::filesystem::path& bundle);

// The offsets at which the log's file header and each of its blocks end, in order.
std::vector<std::size_t> block_ends(const std::string& log);

std::string read_bytes(const std::filesystem::path& file);
void write_bytes(const std::filesystem::path& file, const std::string& bytes);
// Replaces the first `from` in `file` with `to`; false if `from` is not in it.
bool replace_in(const std::filesystem::path& file, const std::string& from, const std::string& to);

// `reheap-snap replay bundle args...`, bounded, with `env` added to its environment.
BoundedRun snap_replay(const std::filesystem::path& bundle, const std::vector<std::string>& args = {},
                       const std::vector<std::string>& env = {}, const Bounds& bounds = {});

}  // namespace replay_test
