// A crash bundle: what a failing event of a recorded reactor leaves behind so that the failure
// can be replayed elsewhere (reheap/recording.h).
//
// A bundle is a directory `crash-<event>/` holding the anchor (a full snapshot of the heap as it
// was before the log's first event), the log from that anchor up to and including the failing
// event (whose last record is kEventFailed), and manifest.json, which says what failed and which
// program recorded it. The failed heap itself is not saved: its state is suspect, and the anchor
// plus the log reproduce it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "reheap/actor_ref.h"

namespace reheap::detail::recording {

struct CrashManifest {
  std::string build_id;        // of the recording program's main executable
  std::string program;         // its path, for `reheap-snap replay` to run it again
  ActorRef reactor{};
  std::string reactor_type;    // demangled
  std::string hook;            // "on_message", ...
  std::string failure;         // what the hook threw
  std::uint64_t failing_event = 0;
  std::uint64_t recording_id = 0;
  std::string anchor;          // the snapshot's file name in the bundle
  std::uint64_t anchor_events = 0;
};

void write_manifest(const std::filesystem::path& file, const CrashManifest& manifest);

// The manifest's text around the three fields only the failure tells (hook, failure,
// failing_event), for a writer that may not allocate then (fatal_signal.h): the text is
// head, the hook as a JSON string, kAfterHook, the failure as a JSON string, kAfterFailure, the
// failing event's number, tail. write_manifest writes the same.
struct ManifestFrame {
  static constexpr const char* kAfterHook = ",\n  \"failure\": ";
  static constexpr const char* kAfterFailure = ",\n  \"failing_event\": ";
  std::string head;
  std::string tail;
};
ManifestFrame manifest_frame(const CrashManifest& manifest);
// Writes `bytes` to `file` (replacing it). Throws RecordingError(kIo).
void write_whole_file(const std::filesystem::path& file, std::span<const unsigned char> bytes);

}  // namespace reheap::detail::recording
