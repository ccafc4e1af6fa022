// Reading the files of a recording and of a crash bundle (log segments, manifest.json) into
// memory: regular files only, never blocking on open, never past a bound.
//
// A recording, and even more a crash bundle, may come from elsewhere, and what stands under one of
// its names can be anything: a FIFO would block open() until a writer came (and then deliver what
// that writer chose), /dev/zero (or a link to it) never ends, a directory fails only at the first
// read. So a file is opened with O_NONBLOCK (a FIFO's open returns at once), the type that counts
// is that of what was opened (fstat), and anything but a regular file is refused before a byte is
// read. A regular file is read up to the size fstat gave, in chunks: a file that grows while it
// is read is read as it was, one larger than the caller's bound is refused before its bytes are,
// and one that does not start with the caller's magic number stops after its first chunk (a huge
// file of anything else costs one chunk, not its size).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace reheap::detail::recording {

// What a file is read as, for the errors ("the crash bundle's manifest", "a recording log").
struct RecordingFileKind {
  const char* what;
  std::uint64_t max_bytes;  // larger files are refused (kIo)
  // When not empty: a file that does not start with these bytes is returned after its first chunk
  // only, for the caller's parser to refuse.
  std::span<const unsigned char> magic{};
};

// The bytes of `file`. Throws RecordingError(kIo) naming the file: cannot be opened, not a
// regular file ("is a FIFO, not a regular file"), larger than kind.max_bytes, or a read failed.
std::vector<unsigned char> read_recording_file(const std::filesystem::path& file, const RecordingFileKind& kind);

// "FIFO", "directory", "character device", ... for a st_mode that is not a regular file.
const char* file_type_name(unsigned mode) noexcept;

}  // namespace reheap::detail::recording
