// A minimal streaming JSON writer for `reheap-snap --json`: objects, arrays, strings, integers
// and booleans, with commas placed automatically. It exists because the tool needs nothing more
// and the project takes no JSON dependency.
//
// Strings are escaped per RFC 8259, and bytes that are not valid UTF-8 (a file name may hold
// any bytes) become U+FFFD, so the output is always valid JSON in valid UTF-8. Numbers above
// 2^53 lose precision in many JSON readers, so callers write 64-bit ids and addresses as hex
// strings (hex() in command.h) and keep plain numbers for counts and sizes.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace reheap::snap {

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}

  void begin_object();
  void end_object();
  void begin_array();
  void end_array();

  // Inside an object, a key must precede every value.
  void key(std::string_view name);

  void value(std::string_view text);
  void value(const char* text) { value(std::string_view(text)); }
  void value(std::uint64_t number);
  void value(std::int64_t number);
  void value(std::uint32_t number) { value(std::uint64_t{number}); }
  void value(int number) { value(std::int64_t{number}); }
  void value(bool flag);
  void null();

  // key() then value(), for the common case.
  template <typename T>
  void field(std::string_view name, const T& v) {
    key(name);
    value(v);
  }

  // Ends the document with a newline; every container must be closed.
  void finish();

  // The escaped, quoted form of `text` (exposed for the tests of other writers, and for reuse).
  static std::string quote(std::string_view text);

 private:
  // Writes the comma (and indentation) owed before the next value or key.
  void separate();
  // Checks that a value may come here, then separates it from the previous one.
  void scalar();
  void open(char bracket);
  void close(char bracket);

  struct Level {
    bool object = false;
    bool empty = true;
    bool after_key = false;
  };
  std::ostream& out_;
  std::vector<Level> stack_;
};

}  // namespace reheap::snap
