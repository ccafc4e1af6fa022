// Manifest: the file that says which data set a data directory holds and names its complete
// saved set of shards.
//
// A save writes one snapshot per shard (a full one, or an increment on the shard's previous
// file), and only when every shard's file is written does it replace the manifest. The manifest
// is the commit point: start-up restores exactly the set it names, so a crash during a save
// leaves the previous set.
//
// The data set. The first start on a directory writes a manifest before anything else: a new
// random set id, the node of the process and the shard count, and no shard lines (an empty set).
// From then on the directory belongs to that data set: every shard's heap carries the set id, its
// index and the shard count (shard_label.h), so every file says which set and shard it holds, and
// start-up checks each file the manifest names against it before restoring any
// (saved_set_check.h). A directory with shard files and no manifest is therefore never a first
// start: it is refused, naming the files.
//
// What a save may delete or overwrite: only what it wrote itself. Its file names are new (every
// save writes shard-<index>.<generation>.snap at a generation none of whose names exists in the
// directory); after the new manifest is durable it deletes the files of the set it replaced, and
// the files start-up found to be this data set's but unused (by their labels: a save that did not
// finish, or an older set whose deletion did not); a save that fails deletes the files it wrote.
// Any other file, a shard file another server wrote or an operator put there included, is left
// alone by every save; start-up names it.
//
// Format (text, one field per line, so an operator can read it):
//   reheap-kv manifest 2
//   set <16 hex digits>                  the data set's id
//   node <n>                             the node (REHEAP_NODE) of the processes that save it
//   generation <n>
//   shards <count>
//   saved_ms <ms since the Unix epoch>
//   shard <index> <file> [<file> ...]     one line per shard, or none for an empty set: its chain,
//                                         full save first, the file to restore last (restore
//                                         follows it back)
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
  std::uint64_t set_id = 0;
  std::uint32_t node = 0;
  std::uint64_t generation = 0;
  std::uint32_t shards = 0;
  std::int64_t saved_ms = 0;
  // By shard: file names in the data directory; empty for an empty set (nothing saved yet).
  std::vector<std::vector<std::string>> chains;
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
// The shard and generation a file name says, if it is shard-<index>.<generation>.snap.
struct ShardFileName {
  std::uint32_t index = 0;
  std::uint64_t generation = 0;
};
std::optional<ShardFileName> parse_shard_file_name(const std::string& name);
// The names of the entries of `dir` that look like shard files (shard-*.snap, whatever their
// type), by shard index, then generation. Throws ManifestError naming the directory if it cannot be listed.
std::vector<std::string> shard_files(const std::filesystem::path& dir);
// The lowest generation above `after` under which no file of `shards` shards exists in `dir`
// (no entry of any type, not even a dangling symlink): a save's names, which replace nothing.
std::uint64_t free_generation(const std::filesystem::path& dir, std::uint32_t shards, std::uint64_t after);
// The highest generation among the shard snapshot files of `dir` (0 if none), whatever the
// manifest says: a start that ignores a bad set saves above it, so no bad file is overwritten.
std::uint64_t newest_file_generation(const std::filesystem::path& dir);
// Moves every shard snapshot file of `dir`, then its manifest, into a new subdirectory
// `unrestorable-<n>` (n from 1, the first free) and returns it: a start that ignores a set it
// cannot restore keeps what was saved before (its good shards' files too, and any shard file of
// the directory, whoever wrote it) whole and out of the way of the new data set's saves. Throws
// ManifestError, naming the file, if a move fails; the files moved so far stay moved.
std::filesystem::path set_aside_saved_set(const std::filesystem::path& dir);

}  // namespace kv
