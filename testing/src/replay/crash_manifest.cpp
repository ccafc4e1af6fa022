// A crash bundle's manifest (see crash_manifest.h).
#include "crash_manifest.h"

#include <cctype>
#include <fstream>
#include <sstream>

#include "reheap/recording_log.h"

namespace reheap::testing::detail {
namespace {

// A parser for one flat JSON object whose values are strings or non-negative integers.
class FlatJson {
 public:
  FlatJson(std::string text, std::filesystem::path file) : text_(std::move(text)), file_(std::move(file)) {}

  std::map<std::string, std::string> parse() {
    std::map<std::string, std::string> out;
    expect('{');
    skip_space();
    if (peek() == '}') return out;
    for (;;) {
      std::string key = string();
      expect(':');
      skip_space();
      std::string value;
      if (peek() == '"') {
        value = string();
      } else {
        while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_])) != 0) value += text_[at_++];
        if (value.empty()) fail("a string or an integer expected");
      }
      out[std::move(key)] = std::move(value);
      skip_space();
      if (peek() == ',') {
        ++at_;
        continue;
      }
      expect('}');
      return out;
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw RecordingError(RecordingErrc::kCorrupt, file_, 0,
                         "malformed manifest at byte " + std::to_string(at_) + ": " + what);
  }
  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_])) != 0) ++at_;
  }
  char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail(std::string("'") + c + "' expected");
    ++at_;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (at_ < text_.size() && text_[at_] != '"') {
      char c = text_[at_++];
      if (c == '\\') {
        if (at_ >= text_.size()) fail("an escape at the end");
        c = text_[at_++];
        if (c == 'u') {
          if (at_ + 4 > text_.size()) fail("a short \\u escape");
          out += static_cast<char>(std::stoi(text_.substr(at_, 4), nullptr, 16));
          at_ += 4;
          continue;
        }
        if (c == 'n') c = '\n';
        if (c == 't') c = '\t';
      }
      out += c;
    }
    if (at_ >= text_.size()) fail("an unterminated string");
    ++at_;
    return out;
  }

  std::string text_;
  std::filesystem::path file_;
  std::size_t at_ = 0;
};

}  // namespace

BundleManifest read_bundle_manifest(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw RecordingError(RecordingErrc::kIo, file, 0, "cannot read the crash bundle's manifest");
  std::ostringstream text;
  text << in.rdbuf();
  const std::map<std::string, std::string> fields = FlatJson(text.str(), file).parse();
  auto field = [&](const char* key) -> std::string {
    const auto it = fields.find(key);
    return it == fields.end() ? std::string() : it->second;
  };
  if (field("format") != "reheap-crash-bundle") {
    throw RecordingError(RecordingErrc::kNotARecording, file, 0,
                         "not a crash bundle manifest (its \"format\" is not \"reheap-crash-bundle\")");
  }
  if (field("version") != "1") {
    throw RecordingError(RecordingErrc::kVersion, file, 0,
                         "crash bundle manifest version " + field("version") + " (this reader knows 1)");
  }
  BundleManifest m;
  m.build_id = field("build_id");
  m.program = field("program");
  m.reactor_type = field("reactor_type");
  m.hook = field("hook");
  m.failure = field("failure");
  m.anchor = field("anchor");
  const std::string failing = field("failing_event");
  if (failing.empty() || m.anchor.empty()) {
    throw RecordingError(RecordingErrc::kCorrupt, file, 0, "the manifest lacks \"failing_event\" or \"anchor\"");
  }
  m.failing_event = std::stoull(failing);
  return m;
}

}  // namespace reheap::testing::detail
