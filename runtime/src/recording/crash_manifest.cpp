// A crash bundle's manifest (see crash_manifest.h).
#include "recording/crash_manifest.h"

#include <charconv>
#include <cstdio>
#include <map>
#include <string_view>
#include <vector>

#include "recording/recording_file.h"

namespace reheap::detail::recording {
namespace {

// A value of the flat object: a string (escapes resolved) or the digits of an integer.
struct JsonValue {
  bool is_string = false;
  std::string text;
};

// A parser for one flat JSON object whose values are strings or non-negative integers.
class FlatJson {
 public:
  FlatJson(std::string_view text, const std::filesystem::path& file) : text_(text), file_(file) {}

  std::map<std::string, JsonValue> parse() {
    std::map<std::string, JsonValue> out;
    expect('{');
    skip_space();
    if (peek() != '}') {
      for (;;) {
        skip_space();
        const std::size_t key_at = at_;
        std::string key = string();
        expect(':');
        skip_space();
        JsonValue value;
        if (peek() == '"') {
          value.is_string = true;
          value.text = string();
        } else {
          while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') value.text += text_[at_++];
          if (value.text.empty()) fail("a string or a non-negative integer expected");
        }
        if (!out.emplace(key, std::move(value)).second) {
          at_ = key_at;
          fail("\"" + printable(key) + "\" appears twice");
        }
        skip_space();
        if (peek() != ',') break;
        ++at_;
      }
    }
    expect('}');
    skip_space();
    if (at_ != text_.size()) fail("text after the object's closing brace");
    return out;
  }

  // `s` with its control characters escaped, to quote it in an error.
  static std::string printable(std::string_view s) {
    std::string out;
    for (const char c : s.substr(0, 200)) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
        out += escaped;
      } else {
        out += c;
      }
    }
    return s.size() > 200 ? out + "..." : out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw RecordingError(RecordingErrc::kCorrupt, file_, 0,
                         "malformed crash bundle manifest at byte " + std::to_string(at_) + ": " + what);
  }
  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r')) {
      ++at_;
    }
  }
  char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }
  void expect(char c) {
    skip_space();
    if (at_ >= text_.size()) fail(std::string("'") + c + "' expected, the file ends");
    if (text_[at_] != c) fail(std::string("'") + c + "' expected");
    ++at_;
  }
  unsigned hex4() {
    if (text_.size() - at_ < 4) fail("a \\u escape cut short");
    unsigned v = 0;
    const auto [end, error] = std::from_chars(text_.data() + at_, text_.data() + at_ + 4, v, 16);
    if (error != std::errc() || end != text_.data() + at_ + 4) fail("a \\u escape without four hex digits");
    at_ += 4;
    return v;
  }
  void utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }
  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (at_ >= text_.size()) fail("a string without its closing quote");
      const char c = text_[at_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) {
        --at_;
        fail("a control character in a string (JSON escapes them)");
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= text_.size()) fail("an escape at the end of the file");
      const char e = text_[at_++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          // A NUL would cut a path or a name short wherever it is used as a C string.
          if (cp == 0) fail("a NUL character (\\u0000) in a string");
          if (cp >= 0xdc00 && cp <= 0xdfff) fail("a \\u escape of a lone low surrogate");
          if (cp >= 0xd800 && cp <= 0xdbff) {
            if (text_.size() - at_ < 2 || text_[at_] != '\\' || text_[at_ + 1] != 'u') {
              fail("a \\u escape of a high surrogate without its low one");
            }
            at_ += 2;
            const unsigned low = hex4();
            if (low < 0xdc00 || low > 0xdfff) fail("a \\u escape of a high surrogate without its low one");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          }
          utf8(out, cp);
          break;
        }
        default:
          --at_;
          fail(std::string("an unknown escape \\") + FlatJson::printable(std::string_view(&e, 1)));
      }
    }
  }

  std::string_view text_;
  const std::filesystem::path& file_;
  std::size_t at_ = 0;
};

// The fields, checked for type and range; errors name the field.
class Fields {
 public:
  Fields(std::map<std::string, JsonValue> fields, const std::filesystem::path& file)
      : fields_(std::move(fields)), file_(file) {}

  bool has(const char* key) const { return fields_.count(key) != 0; }
  std::string string(const char* key) const {
    const JsonValue* v = find(key);
    if (v == nullptr) return {};
    if (!v->is_string) fail(key, "is the number " + v->text + ", not a string");
    return v->text;
  }
  std::uint64_t integer(const char* key) const {
    const JsonValue* v = find(key);
    if (v == nullptr) return 0;
    if (v->is_string) fail(key, "is a string, not an integer");
    return to_u64(key, v->text);
  }
  // A 64-bit id, written as a string of decimal digits (JSON readers keep those exact).
  std::uint64_t id(const char* key) const {
    const std::string text = string(key);
    if (text.empty()) return 0;
    if (text.find_first_not_of("0123456789") != std::string::npos) {
      fail(key, "is \"" + FlatJson::printable(text) + "\", not a decimal number");
    }
    return to_u64(key, text);
  }
  [[noreturn]] void fail(const char* key, const std::string& what) const {
    throw RecordingError(RecordingErrc::kCorrupt, file_, 0, std::string("the crash bundle manifest's \"") + key +
                                                                "\" " + what);
  }

 private:
  const JsonValue* find(const char* key) const {
    const auto it = fields_.find(key);
    return it == fields_.end() ? nullptr : &it->second;
  }
  std::uint64_t to_u64(const char* key, const std::string& digits) const {
    std::uint64_t v = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (error == std::errc::result_out_of_range) {
      fail(key, "is " + FlatJson::printable(digits) + ", more than 64 bits hold");
    }
    if (error != std::errc() || end != digits.data() + digits.size()) fail(key, "is not a decimal number");
    return v;
  }

  std::map<std::string, JsonValue> fields_;
  const std::filesystem::path& file_;
};

}  // namespace

CrashManifest read_crash_manifest(const std::filesystem::path& file) {
  const std::vector<unsigned char> bytes = read_recording_file(file, {"a crash bundle's manifest", kMaxManifestBytes});
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const Fields fields(FlatJson(text, file).parse(), file);
  // Whether this is a manifest at all comes first: another JSON file is named as such.
  if (!fields.has("format") || fields.string("format") != "reheap-crash-bundle") {
    throw RecordingError(RecordingErrc::kNotARecording, file, 0,
                         "not a crash bundle manifest (its \"format\" is not \"reheap-crash-bundle\")");
  }
  if (!fields.has("version") || fields.integer("version") != 1) {
    throw RecordingError(RecordingErrc::kVersion, file, 0,
                         "crash bundle manifest version " +
                             (fields.has("version") ? std::to_string(fields.integer("version")) : "(none)") +
                             " (this reader knows 1)");
  }
  if (!fields.has("failing_event") || !fields.has("anchor")) {
    throw RecordingError(RecordingErrc::kCorrupt, file, 0,
                         "the crash bundle manifest lacks \"failing_event\" or \"anchor\"");
  }
  CrashManifest m;
  m.build_id = fields.string("build_id");
  if (m.build_id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    fields.fail("build_id", "is \"" + FlatJson::printable(m.build_id) + "\", not lowercase hex");
  }
  m.program = fields.string("program");
  m.reactor = ActorRef(fields.id("reactor"));
  m.reactor_type = fields.string("reactor_type");
  m.hook = fields.string("hook");
  m.failure = fields.string("failure");
  m.failing_event = fields.integer("failing_event");
  m.recording_id = fields.id("recording_id");
  m.anchor = fields.string("anchor");
  m.anchor_events = fields.integer("anchor_events");
  if (m.failing_event == 0) fields.fail("failing_event", "is 0: events are numbered from 1");
  if (fields.has("anchor_events") && m.failing_event <= m.anchor_events) {
    fields.fail("failing_event", "is " + std::to_string(m.failing_event) + ", not after the anchor's event " +
                                     std::to_string(m.anchor_events) + " (\"anchor_events\")");
  }
  // The anchor is opened as <bundle>/<anchor>: a path would reach out of the bundle.
  if (m.anchor.empty() || m.anchor == "." || m.anchor == ".." || m.anchor.find('/') != std::string::npos) {
    fields.fail("anchor", "is \"" + FlatJson::printable(m.anchor) + "\", not the name of a file in the bundle");
  }
  return m;
}

std::string bundle_log_shortfall(const CrashManifest& m, const BundleLogReach& reach) {
  const std::string failing = std::to_string(m.failing_event);
  const std::string marked =
      reach.first_failed == 0 ? std::string() : " (it marks event " + std::to_string(reach.first_failed) + " failed)";
  if (m.failing_event <= reach.events_before) {
    return "the log starts after event " + std::to_string(reach.events_before) + ", past the failing event " +
           failing + " the manifest names";
  }
  if (reach.last_event < m.failing_event) {
    return "the log ends at event " + std::to_string(reach.last_event) +
           (reach.last_event == reach.events_before ? " (it holds no event)" : "") + ", before the failing event " +
           failing + " the manifest names" + marked +
           ": the bundle was cut short, and its failure cannot be replayed";
  }
  if (reach.first_failed != m.failing_event) {
    return "the log does not mark event " + failing + ", the failing event the manifest names, as failed" +
           (reach.first_failed == 0 ? std::string(" (no event_failed record)") : marked) +
           ": its failure cannot be replayed";
  }
  return {};
}

RecordingError bundle_log_cut(const RecordingError& truncated, const CrashManifest& m) {
  // The reader's sentence, without the file name it starts with (the new error names it too).
  std::string what = truncated.what();
  const std::string prefix = truncated.file().string() + ": ";
  if (what.rfind(prefix, 0) == 0) what.erase(0, prefix.size());
  return RecordingError(RecordingErrc::kIncomplete, truncated.file(), truncated.event(),
                        what + ": the crash bundle's log is cut short, and the failing event " +
                            std::to_string(m.failing_event) + " its manifest names cannot be replayed");
}

std::string bundle_log_mismatch(const CrashManifest& m, const LogHeader& header) {
  if (!m.build_id.empty() && m.build_id != header.build_id) {
    return "the manifest names build " + m.build_id + ", the log was recorded by build " +
           (header.build_id.empty() ? std::string("(none)") : header.build_id);
  }
  if (m.recording_id != 0 && m.recording_id != header.recording_id) {
    return "the manifest names recording " + std::to_string(m.recording_id) + ", the log is of recording " +
           std::to_string(header.recording_id);
  }
  if (m.reactor && m.reactor != header.actor) {
    return "the manifest names reactor " + std::to_string(m.reactor.value()) + ", the log is of reactor " +
           std::to_string(header.actor.value());
  }
  return {};
}

}  // namespace reheap::detail::recording
