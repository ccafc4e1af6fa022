// SavedSetCheck (see saved_set_check.h).
#include "saved_set_check.h"

#include <cinttypes>
#include <cstdio>
#include <exception>
#include <optional>
#include <set>

#include "reheap/snapshot_file.h"
#include "shard_label.h"

namespace kv {

namespace {

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "%016" PRIx64, value);
  return text;
}

// What is wrong with one file of shard `index`'s line, as its label and name say; nothing if it
// agrees.
std::optional<std::string> file_problem(const std::filesystem::path& file, const Manifest& manifest,
                                        std::uint32_t index) {
  const std::string name = file.filename().string();
  const std::optional<ShardFileName> named = parse_shard_file_name(name);
  if (!named) return file.string() + ": not a shard file's name (shard-<index>.<generation>.snap)";
  SavedShard saved;
  try {
    saved = read_saved_shard(file);
  } catch (const ShardLabelError& e) {
    return std::string(e.what());
  }
  const ShardLabel& label = saved.label;
  if (label.set_id != manifest.set_id) {
    return file.string() + ": belongs to another data set (" + hex(label.set_id) + ", the manifest's is " +
           hex(manifest.set_id) + "): a file of another server's directory?";
  }
  if (label.count != manifest.shards) {
    return file.string() + ": holds shard " + std::to_string(label.index) + " of a set of " +
           std::to_string(label.count) + " shards, the manifest says " + std::to_string(manifest.shards);
  }
  if (label.index != index) {
    return file.string() + ": holds shard " + std::to_string(label.index) + ", not shard " + std::to_string(index) +
           " as the manifest's line for shard " + std::to_string(index) + " says";
  }
  if (named->index != label.index || named->generation != label.generation) {
    return file.string() + ": holds shard " + std::to_string(label.index) + " of generation " +
           std::to_string(label.generation) + ", not what its name says (renamed?)";
  }
  if (saved.saved_by_node != static_cast<std::int64_t>(manifest.node)) {
    return file.string() + ": saved by node " + std::to_string(saved.saved_by_node) + ", the data set's is node " +
           std::to_string(manifest.node);
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> check_shard_line(const std::filesystem::path& dir, const Manifest& manifest,
                                          std::uint32_t index) {
  const std::vector<std::string>& line = manifest.chains[index];
  const std::filesystem::path last = dir / line.back();
  // The chain restore will follow, from the last file's header back: the line must list exactly
  // it, so that what is checked below is what is restored (and what the saves keep and delete).
  std::vector<std::string> chain;
  try {
    for (const std::filesystem::path& file : reheap::snapshot_chain(last)) chain.push_back(file.filename().string());
  } catch (const std::exception& e) {
    return {e.what()};
  }
  if (chain != line) {
    std::string listed;
    for (const std::string& name : chain) listed += " " + name;
    return {last.string() + ": rests on the chain" + listed + ", not on the files the manifest's line for shard " +
            std::to_string(index) + " lists"};
  }
  std::vector<std::string> problems;
  for (const std::string& name : line) {
    if (std::optional<std::string> problem = file_problem(dir / name, manifest, index)) {
      problems.push_back(std::move(*problem));
    }
  }
  if (problems.empty()) {
    const std::optional<ShardFileName> named = parse_shard_file_name(line.back());
    if (named->generation != manifest.generation) {
      problems.push_back(last.string() + ": of generation " + std::to_string(named->generation) +
                         ", the manifest's is " + std::to_string(manifest.generation));
    }
  }
  return problems;
}

UnnamedFiles sort_unnamed_files(const std::filesystem::path& dir, const Manifest& manifest) {
  std::set<std::string> named;
  for (const auto& line : manifest.chains) named.insert(line.begin(), line.end());
  UnnamedFiles sorted;
  for (const std::string& name : shard_files(dir)) {
    if (named.count(name) != 0) continue;
    const std::filesystem::path file = dir / name;
    const std::optional<ShardFileName> parsed = parse_shard_file_name(name);
    std::error_code ec;
    if (!parsed || !std::filesystem::is_regular_file(std::filesystem::symlink_status(file, ec))) {
      sorted.foreign.push_back(file.string() + " (not a shard file of a reheap-kv save)");
      continue;
    }
    try {
      const SavedShard saved = read_saved_shard(file);
      const ShardLabel& label = saved.label;
      if (label.set_id == manifest.set_id && label.count == manifest.shards && label.index == parsed->index &&
          label.generation == parsed->generation) {
        sorted.own.push_back(name);
      } else {
        sorted.foreign.push_back(file.string() + " (a shard file of another data set, or renamed)");
      }
    } catch (const std::exception& e) {
      sorted.foreign.push_back(e.what());  // it names the file
    }
  }
  return sorted;
}

}  // namespace kv
