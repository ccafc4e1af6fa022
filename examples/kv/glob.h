// Glob: the pattern language of KEYS and SCAN MATCH, as Redis defines it.
//
//   *        any sequence of bytes, also empty
//   ?        any one byte
//   [abc]    one of a, b, c;  [^abc] any byte but those;  [a-z] a range (reversed ranges work too)
//   \x       the byte x itself (also inside brackets)
//
// Matching is on bytes, case-sensitive. An unclosed '[' takes the rest of the pattern as its set.
#pragma once

#include <string_view>

namespace kv {

bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace kv
