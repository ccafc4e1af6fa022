// glob_match: a linear scan that remembers the last '*' and, on a mismatch, lets that star take
// one more byte. Only '*' matches a variable number of bytes, so retrying from the last star is
// enough and the cost stays O(pattern * text) without recursion (Redis's recursive matcher needs a
// nesting limit for the same patterns).
#include "glob.h"

#include <cstddef>

namespace kv {
namespace {

// Matches one byte against the class starting just after '[' at pattern[p]; sets `next` to the
// index after the closing ']'.
bool class_matches(std::string_view pattern, std::size_t p, unsigned char c, std::size_t& next) {
  bool negate = false;
  if (p < pattern.size() && pattern[p] == '^') {
    negate = true;
    ++p;
  }
  bool matched = false;
  while (p < pattern.size() && pattern[p] != ']') {
    if (pattern[p] == '\\' && p + 1 < pattern.size()) {
      ++p;
      if (static_cast<unsigned char>(pattern[p]) == c) matched = true;
      ++p;
    } else if (p + 2 < pattern.size() && pattern[p + 1] == '-' && pattern[p + 2] != ']') {
      unsigned char low = static_cast<unsigned char>(pattern[p]);
      unsigned char high = static_cast<unsigned char>(pattern[p + 2]);
      if (low > high) {
        const unsigned char swap = low;
        low = high;
        high = swap;
      }
      if (c >= low && c <= high) matched = true;
      p += 3;
    } else {
      if (static_cast<unsigned char>(pattern[p]) == c) matched = true;
      ++p;
    }
  }
  next = p < pattern.size() ? p + 1 : p;  // past ']' (or the end of an unclosed class)
  return matched != negate;
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) {
  std::size_t p = 0;
  std::size_t t = 0;
  std::size_t star = std::string_view::npos;  // index in pattern just after the last '*'
  std::size_t star_text = 0;                  // where in text that star's match ends now
  while (t < text.size()) {
    if (p < pattern.size()) {
      const char pc = pattern[p];
      if (pc == '*') {
        while (p < pattern.size() && pattern[p] == '*') ++p;
        if (p == pattern.size()) return true;
        star = p;
        star_text = t;
        continue;
      }
      const unsigned char c = static_cast<unsigned char>(text[t]);
      if (pc == '?') {
        ++p;
        ++t;
        continue;
      }
      if (pc == '[') {
        std::size_t next = 0;
        if (class_matches(pattern, p + 1, c, next)) {
          p = next;
          ++t;
          continue;
        }
      } else if (pc == '\\' && p + 1 < pattern.size()) {
        if (static_cast<unsigned char>(pattern[p + 1]) == c) {
          p += 2;
          ++t;
          continue;
        }
      } else if (static_cast<unsigned char>(pc) == c) {
        ++p;
        ++t;
        continue;
      }
    }
    // Mismatch (or pattern exhausted): let the last star swallow one more byte.
    if (star == std::string_view::npos) return false;
    p = star;
    t = ++star_text;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace kv
