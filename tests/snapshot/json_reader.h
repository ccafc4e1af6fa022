// The reading side of json_writer.h: a strict JSON parser (RFC 8259) that builds a small tree.
// The tool itself only writes JSON; this exists so that its tests (tests/snapshot/
// reheap_snap_test.cpp) can check that every --json output parses and read values from it, with
// no JSON library. Numbers keep their integer part only: the tool writes non-negative integers.
#pragma once

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace reheap::snap {

// A parsed value; only the fields of its type are set.
struct Json {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject } type = Type::kNull;
  bool flag = false;
  std::uint64_t number = 0;
  std::string text;
  std::vector<Json> items;
  // Objects: member i is keys[i], values[i] (a vector of pairs would need Json complete here).
  std::vector<std::string> keys;
  std::vector<Json> values;

  // A missing member or item reads as null, so a test fails on the value, not on a crash.
  const Json& operator[](std::string_view key) const {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == key) return values[i];
    }
    return none();
  }
  const Json& operator[](std::size_t i) const { return i < items.size() ? items[i] : none(); }
  static const Json& none() {
    static const Json empty;
    return empty;
  }
};

// Parses one document: JsonParser(text).document() is empty unless `text` is valid JSON.
class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : s_(text) {}
  std::optional<Json> document() {
    Json out;
    if (!value(out, 0)) return std::nullopt;
    space();
    if (i_ != s_.size()) return std::nullopt;
    return out;
  }

 private:
  bool value(Json& out, int depth) {
    space();
    if (i_ >= s_.size() || depth > 100) return false;
    const char c = s_[i_];
    if (c == '"') {
      out.type = Json::Type::kString;
      return string(out.text);
    }
    if (c == 't' || c == 'f') {
      out.type = Json::Type::kBool;
      out.flag = c == 't';
      return literal(out.flag ? "true" : "false");
    }
    if (c == 'n') return literal("null");
    if (c == '[' || c == '{') return container(out, depth);
    return number(out);
  }
  bool container(Json& out, int depth) {
    const bool object = s_[i_++] == '{';
    out.type = object ? Json::Type::kObject : Json::Type::kArray;
    space();
    if (i_ < s_.size() && s_[i_] == (object ? '}' : ']')) {
      ++i_;
      return true;
    }
    for (;;) {
      Json item;
      std::string name;
      if (object) {
        space();
        if (i_ >= s_.size() || s_[i_] != '"' || !string(name)) return false;
        space();
        if (i_ >= s_.size() || s_[i_++] != ':') return false;
      }
      if (!value(item, depth + 1)) return false;
      if (object) {
        out.keys.push_back(std::move(name));
        out.values.push_back(std::move(item));
      } else {
        out.items.push_back(std::move(item));
      }
      space();
      if (i_ >= s_.size()) return false;
      const char c = s_[i_++];
      if (c == (object ? '}' : ']')) return true;
      if (c != ',') return false;
    }
  }
  bool string(std::string& out) {
    ++i_;  // the opening quote
    while (i_ < s_.size()) {
      const unsigned char c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return true;
      if (c < 0x20) return false;
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (i_ >= s_.size()) return false;
      const char e = s_[i_++];
      const std::string_view simple = "\"\\/bfnrt";
      const std::string_view meaning = "\"\\/\b\f\n\r\t";
      if (simple.find(e) != std::string_view::npos) {
        out += meaning[simple.find(e)];
      } else if (e == 'u' && i_ + 4 <= s_.size() && hex4(s_.substr(i_, 4))) {
        const unsigned long code = std::stoul(std::string(s_.substr(i_, 4)), nullptr, 16);
        i_ += 4;
        // The tool escapes only control characters and U+FFFD: no surrogate pairs.
        if (code < 0x80) {
          out += static_cast<char>(code);
        } else if (code < 0x800) {
          out += static_cast<char>(0xC0 | (code >> 6));
          out += static_cast<char>(0x80 | (code & 0x3F));
        } else {
          out += static_cast<char>(0xE0 | (code >> 12));
          out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (code & 0x3F));
        }
      } else {
        return false;
      }
    }
    return false;
  }
  bool number(Json& out) {
    out.type = Json::Type::kNumber;
    const std::size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    const std::size_t digits = i_;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    if (i_ == digits || (s_[digits] == '0' && i_ - digits > 1)) return false;
    out.number = std::stoull(std::string(s_.substr(start, i_ - start)));
    if (i_ < s_.size() && s_[i_] == '.') {
      const std::size_t fraction = ++i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      if (i_ == fraction) return false;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      const std::size_t exponent = i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      if (i_ == exponent) return false;
    }
    return true;
  }
  static bool hex4(std::string_view digits) {
    for (const char d : digits) {
      if (!std::isxdigit(static_cast<unsigned char>(d))) return false;
    }
    return true;
  }
  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }
  void space() {
    while (i_ < s_.size() && std::string_view(" \n\t\r").find(s_[i_]) != std::string_view::npos) ++i_;
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

}  // namespace reheap::snap
