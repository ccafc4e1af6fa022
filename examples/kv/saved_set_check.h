// SavedSetCheck: whether a data directory's shard files agree with its manifest, decided before
// any shard is restored.
//
// A manifest's checksum proves only that the manifest is the one written; whether the files it
// names hold what it says is a question for the files. Each says it (shard_label.h): the data set,
// the shard index and count, the generation of the save that wrote it, and (in its snapshot
// header) the node that saved it. A file agrees with its manifest line when it holds that line's
// shard of the manifest's data set, of a set with the manifest's shard count, saved by the
// manifest's node, under its own name (shard-<index>.<generation>.snap, the label's index and
// generation), the last file of the line at the manifest's generation; and the line lists exactly
// the chain that last file follows back (reheap::snapshot_chain). So the lies of a manifest whose
// checksum was recomputed are caught - two lines swapped, a shard count forged - as are a file of
// another server's directory copied in, a file saved by another node, and an increment whose
// parent is another shard's file.
//
// The files the manifest does not name are sorted by what they say: this data set's files (an
// unfinished save's, or an older set's whose deletion did not happen), which the next save
// deletes, and anything else, which no save ever touches.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "manifest.h"

namespace kv {

// What is wrong with shard `index`'s line of `manifest` in `dir`: one sentence per problem, each
// naming the file; empty when the line agrees with its files.
std::vector<std::string> check_shard_line(const std::filesystem::path& dir, const Manifest& manifest,
                                          std::uint32_t index);

// The shard files of `dir` that `manifest` does not name.
struct UnnamedFiles {
  // This data set's, by their labels and names: deleted by the next save that succeeds.
  std::vector<std::string> own;
  // Anything else: a sentence per file, naming it and saying what it is.
  std::vector<std::string> foreign;
};
UnnamedFiles sort_unnamed_files(const std::filesystem::path& dir, const Manifest& manifest);

}  // namespace kv
