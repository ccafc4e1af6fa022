// Internals shared by the case files (cases.cpp, cases_blocks.cpp): the digest accumulator, blocks
// holding a word pattern, and the cases defined in cases_blocks.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "cases.h"

namespace reheap::snaptest::detail {

inline constexpr std::size_t KiB = 1024;
inline constexpr std::size_t MiB = 1024 * KiB;
inline constexpr std::size_t kPage = 4096;

class Digest {
 public:
  void add(std::uint64_t v) { h_ = mix(h_, v); }
  void add(std::string_view s) {
    add(s.size());
    for (std::size_t i = 0; i < s.size(); i += 8) {
      std::uint64_t w = 0;
      std::memcpy(&w, s.data() + i, s.size() - i < 8 ? s.size() - i : 8);
      add(w);
    }
  }
  std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_ = 0x243F6A8885A308D3ull;
};

inline std::uint64_t hash_string(std::string_view s) {
  Digest d;
  d.add(s);
  return d.value();
}

// A block of the current heap holding the word pattern `seed`.
struct Blob {
  unsigned char* p = nullptr;
  std::size_t n = 0;
  std::uint64_t seed = 0;
};

inline Blob new_blob(std::size_t n, std::uint64_t seed) {
  Blob b{new unsigned char[n], n, seed};
  fill_words(b.p, n, seed);
  return b;
}

inline void add_blob(Digest& d, const Blob& b) {
  d.add(b.n);
  d.add(b.seed);
  d.add(words_intact(b.p, b.n, b.seed) ? 1 : 0);
}

Case graph_case();
Case huge_case();
Case gens_case();

}  // namespace reheap::snaptest::detail
