// The heap contents the snapshot tests save and restore, shared by the test process (which builds
// a state and saves it) and the helper processes (which restore it and check it).
//
// A case builds a deterministic state from a seed in the current heap and returns its root
// object; mutate(root, step) changes it deterministically; digest(root) reads the whole logical
// state (following every pointer, making the virtual and std::function calls) into a 64-bit
// value. Two processes that build and mutate alike therefore agree on the digest, and a restored
// heap must give the digest its saver computed.
//
// build and mutate run with the case's heap current; digest allocates only temporaries, with
// whatever allocator is current, and frees them before it returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "reheap/heap.h"

namespace reheap::snaptest {

struct Case {
  std::string_view name;
  void* (*build)(std::uint64_t seed);
  void (*mutate)(void* root, std::uint64_t step);
  std::uint64_t (*digest)(const void* root);
};

// The cases, by name: "map" (std::map<std::string, std::vector<int>>), "unordered"
// (std::unordered_map<std::string, std::string>, 12k entries), "poly" (a class hierarchy with
// virtual functions), "function" (std::function holding lambdas with captures), "graph" (nodes
// whose pointers form cycles), "huge" (a 4 MiB vector, large and huge blocks, a sparse block
// over two chunks), "gens" (a mix that frees and allocates blocks of every class each step, for
// chains of increments).
const std::vector<Case>& all_cases();
const Case& find_case(std::string_view name);  // throws std::invalid_argument

// Makes `heap` current, builds the case into it and sets it as the heap's root.
void* build_in(Heap& heap, const Case& c, std::uint64_t seed);
void mutate_in(Heap& heap, const Case& c, std::uint64_t step);  // mutates heap.root()
std::uint64_t digest_of(const Heap& heap, const Case& c);       // of heap.root()

// Deterministic pseudo-random numbers: the same in every process.
std::uint64_t mix(std::uint64_t a, std::uint64_t b);

// A word pattern filling blocks (cheaper than block_pattern.h's bytes in unoptimised builds),
// and a check that reads the first and last page whole and eight words of every page between.
void fill_words(void* p, std::size_t bytes, std::uint64_t seed);
bool words_intact(const void* p, std::size_t bytes, std::uint64_t seed);

}  // namespace reheap::snaptest
