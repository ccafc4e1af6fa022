// ShardLabel (see shard_label.h).
#include "shard_label.h"

#include <cstring>

#include "reheap/snapshot_file.h"
#include "shard.h"

namespace kv {

SavedShard read_saved_shard(const std::filesystem::path& file) {
  SavedShard saved;
  reheap::SnapshotHeader header;
  try {
    header = reheap::read_snapshot_header(file);
    if (header.root == 0) throw ShardLabelError(file.string() + ": not a shard's snapshot (its heap has no root)");
    unsigned char bytes[sizeof(ShardLabel)];
    reheap::read_snapshot_bytes(file, header.root + Shard::label_offset(), bytes, sizeof bytes);
    std::memcpy(&saved.label, bytes, sizeof bytes);
  } catch (const reheap::SnapshotError& e) {
    // Snapshot errors name the file already.
    throw ShardLabelError(e.what());
  }
  if (saved.label.magic != ShardLabel::kMagic) {
    throw ShardLabelError(file.string() +
                          ": does not say which shard it holds (not a reheap-kv shard's snapshot, or one of an "
                          "older reheap-kv)");
  }
  saved.saved_by_node = header.saved_by_node;
  return saved;
}

}  // namespace kv
