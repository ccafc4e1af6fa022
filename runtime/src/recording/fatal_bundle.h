// The crash bundle of an event that a fatal signal ended (fatal_signal.h): prepared by the
// recorder at each anchor, written by the signal handler with async-signal-safe calls only.
//
// The bundle is the one a thrown failure leaves (crash_bundle.h): the anchor, the log up to and
// including the failing event, whose last record is kEventFailed (the signal, and for a fault
// the address), and manifest.json. In file mode the log's pending block, sealed with that
// record, is appended to the current segment, and the bundle hard-links the anchor and the
// segments (copying them where links fail); in ring mode the in-memory anchor and log are
// written out. A block the fault interrupted while it was being appended is left out: the log
// then ends with the last whole event before, and the manifest still names the failing event.
#pragma once

#include <signal.h>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "recording/crash_bundle.h"
#include "reheap/recording_log.h"

namespace reheap::detail::recording {

class FileSegmentSink;

class FatalBundle {
 public:
  // Ordinary code, at each anchor. `root`: where crash-<event>/ goes ("" : nowhere, no bundle).
  // `log_name`: ring mode's log file name in the bundle.
  void prepare(std::filesystem::path root, ManifestFrame manifest, std::string anchor_name, std::string log_name);

  // What the recorder holds when the signal comes.
  struct Recording {
    const LogWriter* writer = nullptr;
    const char* hook = "";           // of the event under way
    // File mode: the segment sink and the anchor file; ring mode: the anchor and log in memory.
    FileSegmentSink* file = nullptr;
    const std::filesystem::path* anchor_file = nullptr;
    std::span<const unsigned char> checkpoint;
    std::span<const unsigned char> ring;
  };
  // In the signal handler: writes the bundle and says so on stderr. Async-signal-safe.
  void write(int signal, const siginfo_t& info, const Recording& recording) const noexcept;

  // In the handler of another reactor's fatal signal (fatal_flush.h), async-signal-safe:
  // File mode: appends the closed events of the block being built to the current segment.
  static bool append_block(FileSegmentSink& file, const LogWriter::Committed& committed) noexcept;
  // Ring mode: writes the ring's anchor and its log, followed by the closed events of the block
  // being built, into `<root>/ring-<last closed event>/`, where a replay opens them as a
  // recording. False if the ring has no directory or a write failed.
  bool write_ring_dump(std::span<const unsigned char> checkpoint, std::span<const unsigned char> ring,
                       const LogWriter::Committed& committed) const noexcept;

 private:
  std::filesystem::path root_;
  ManifestFrame manifest_;
  std::string anchor_name_;
  std::string log_name_;
};

}  // namespace reheap::detail::recording
