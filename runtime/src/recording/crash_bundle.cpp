// Crash bundles (see crash_bundle.h).
#include "recording/crash_bundle.h"


#include <cstdio>
#include <fstream>

#include "reheap/recording_log.h"

namespace reheap::detail::recording {
namespace {

// A JSON string literal: quotes, backslashes and control characters escaped.
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", u);
      out += escaped;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace

void write_whole_file(const std::filesystem::path& file, std::span<const unsigned char> bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw RecordingError(RecordingErrc::kIo, file, 0, "cannot write the file");
}

ManifestFrame manifest_frame(const CrashManifest& m) {
  // Integers that may exceed 2^53 (ids) are written as strings, which every JSON reader keeps exact.
  ManifestFrame frame;
  frame.head =
      "{\n"
      "  \"format\": \"reheap-crash-bundle\",\n"
      "  \"version\": 1,\n"
      "  \"build_id\": " + json_string(m.build_id) + ",\n" +
      "  \"program\": " + json_string(m.program) + ",\n" +
      "  \"reactor\": \"" + std::to_string(m.reactor.value()) + "\",\n" +
      "  \"reactor_type\": " + json_string(m.reactor_type) + ",\n" +
      "  \"hook\": ";
  frame.tail =
      ",\n  \"recording_id\": \"" + std::to_string(m.recording_id) + "\",\n" +
      "  \"anchor\": " + json_string(m.anchor) + ",\n" +
      "  \"anchor_events\": " + std::to_string(m.anchor_events) + "\n" +
      "}\n";
  return frame;
}

void write_manifest(const std::filesystem::path& file, const CrashManifest& m) {
  const ManifestFrame frame = manifest_frame(m);
  const std::string text = frame.head + json_string(m.hook) + ManifestFrame::kAfterHook + json_string(m.failure) +
                           ManifestFrame::kAfterFailure + std::to_string(m.failing_event) + frame.tail;
  write_whole_file(file, std::span(reinterpret_cast<const unsigned char*>(text.data()), text.size()));
}

}  // namespace reheap::detail::recording
