// Reading a crash bundle's manifest.json (RECORDING_FORMAT.md, "Crash bundles"), for a replay and
// for replay_main_if_asked. The writer is the runtime's (runtime/src/recording/crash_bundle.cpp):
// one flat object of strings and integers, which is all this reader accepts.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

namespace reheap::testing::detail {

struct BundleManifest {
  std::string build_id;
  std::string program;       // the recording program's executable ("" from older writers)
  std::string reactor_type;
  std::string hook;
  std::string failure;
  std::uint64_t failing_event = 0;
  std::string anchor;        // the anchor's file name in the bundle
};

// Throws RecordingError (kNotARecording: not a crash bundle manifest; kCorrupt: malformed).
BundleManifest read_bundle_manifest(const std::filesystem::path& file);

}  // namespace reheap::testing::detail
