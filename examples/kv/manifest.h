// Manifest: the file that names a complete saved set of shards in a data directory.
//
// A save writes one snapshot file per shard (a full one, or an increment on the shard's previous
// file), and only when every shard's file is written does it replace the manifest. The manifest
// is the commit point: start-up restores exactly the set it names, so a crash during a save
// leaves the previous set, whose files a save never overwrites (every save writes new names,
// shard-<index>.<generation>.snap) and deletes only once the new manifest is durable.
//
// Format (text, one field per line, so an operator can read it):
//   reheap-kv manifest 1
//   generation <n>
//   shards <count>
//   saved_ms <ms since the Unix epoch>
//   shard <index> <file> [<file> ...]     one line per shard: its chain, full save first, the
//                                         file to restore last (restore follows it back)
//   checksum <16 hex digits>             FNV-1a 64 of every byte before this line
// Written to manifest.tmp, fsynced, renamed over `manifest`, and the directory fsynced.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kv {

struct Manifest {
  std::uint64_t generation = 0;
  std::uint32_t shards = 0;
  std::int64_t saved_ms = 0;
  std::vector<std::vector<std::string>> chains;  // by shard: file names in the data directory
};

// Corrupt, truncated or foreign manifests, and I/O errors: what() names the file and the fault.
class ManifestError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr const char* kManifestName = "manifest";

// The manifest of `dir`, or nothing if the directory has none (a first start).
std::optional<Manifest> read_manifest(const std::filesystem::path& dir);
// Replaces the manifest of `dir` crash-safely (see above).
void write_manifest(const std::filesystem::path& dir, const Manifest& manifest);
// The snapshot file of shard `index` at `generation`.
std::string shard_file_name(std::uint32_t index, std::uint64_t generation);
// The highest generation among the shard snapshot files of `dir` (0 if none), whatever the
// manifest says: a start that ignores a bad set saves above it, so no bad file is overwritten.
std::uint64_t newest_file_generation(const std::filesystem::path& dir);
// Deletes the shard snapshot files of `dir` that `manifest` does not name; returns how many.
std::size_t delete_unnamed_files(const std::filesystem::path& dir, const Manifest& manifest);
// Moves every shard snapshot file of `dir`, then its manifest, into a new subdirectory
// `unrestorable-<n>` (n from 1, the first free) and returns it: a start that ignores a set it
// cannot restore keeps what was saved before (its good shards' files too) out of the way of the
// saves that follow, which delete the shard files their manifest does not name. Throws
// ManifestError, naming the file, if a move fails; the files moved so far stay moved.
std::filesystem::path set_aside_saved_set(const std::filesystem::path& dir);

}  // namespace kv
