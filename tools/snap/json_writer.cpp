// The JSON writer of `reheap-snap --json` (see json_writer.h).
#include "json_writer.h"

#include <cstdio>
#include <stdexcept>

namespace reheap::snap {
namespace {

// Length of the valid UTF-8 sequence starting at text[i], or 0 if the bytes there are not one
// (overlong forms, surrogates and code points above U+10FFFF included, as RFC 3629 requires).
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong
    if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong
    if (lead == 0xF4) high = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

}  // namespace

std::string JsonWriter::quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const std::size_t length = utf8_length(text, i);
      if (length == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(text.substr(i, length));
        i += length;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
  return out;
}

void JsonWriter::separate() {
  if (stack_.empty()) return;
  Level& level = stack_.back();
  if (level.after_key) {
    level.after_key = false;
    return;
  }
  if (!level.empty) out_ << ',';
  level.empty = false;
  out_ << '\n' << std::string(2 * stack_.size(), ' ');
}

void JsonWriter::open(char bracket) {
  scalar();
  out_ << bracket;
  stack_.push_back(Level{bracket == '{', true, false});
}

void JsonWriter::close(char bracket) {
  if (stack_.empty() || stack_.back().object != (bracket == '}') || stack_.back().after_key) {
    throw std::logic_error("JsonWriter: unbalanced close");
  }
  const bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) out_ << '\n' << std::string(2 * stack_.size(), ' ');
  out_ << bracket;
}

void JsonWriter::begin_object() { open('{'); }
void JsonWriter::end_object() { close('}'); }
void JsonWriter::begin_array() { open('['); }
void JsonWriter::end_array() { close(']'); }

void JsonWriter::key(std::string_view name) {
  if (stack_.empty() || !stack_.back().object || stack_.back().after_key) {
    throw std::logic_error("JsonWriter: key outside an object");
  }
  separate();
  out_ << quote(name) << ": ";
  stack_.back().after_key = true;
}

void JsonWriter::scalar() {
  if (!stack_.empty() && stack_.back().object && !stack_.back().after_key) {
    throw std::logic_error("JsonWriter: value without a key inside an object");
  }
  separate();
}

void JsonWriter::value(std::string_view text) {
  scalar();
  out_ << quote(text);
}

void JsonWriter::value(std::uint64_t number) {
  scalar();
  out_ << number;
}

void JsonWriter::value(std::int64_t number) {
  scalar();
  out_ << number;
}

void JsonWriter::value(bool flag) {
  scalar();
  out_ << (flag ? "true" : "false");
}

void JsonWriter::null() {
  scalar();
  out_ << "null";
}

void JsonWriter::finish() {
  if (!stack_.empty()) throw std::logic_error("JsonWriter: unclosed container");
  out_ << '\n';
}

}  // namespace reheap::snap
