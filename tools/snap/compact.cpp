// `reheap-snap compact LATEST OUT`: folds the chain ending at LATEST into one full snapshot OUT
// with reheap::compact(), which writes OUT crash-safely and maps no heap.
#include <cstdio>
#include <iostream>
#include <vector>

#include "command.h"
#include "json_writer.h"
#include "reheap/snapshot.h"

namespace reheap::snap {

int run_compact(const Options& options) {
  const std::filesystem::path& latest = options.files[0];
  const std::filesystem::path& out = options.files[1];
  // Following the chain first gives a clear "broken chain" message before any writing starts,
  // and the number of files folded for the summary.
  const std::vector<std::filesystem::path> chain = snapshot_chain(latest);
  const SnapshotInfo info = reheap::compact(latest, out);
  if (options.json) {
    JsonWriter json(std::cout);
    json.begin_object();
    json.field("latest", latest.string());
    json.field("out", out.string());
    json.key("chain");
    json.begin_array();
    for (const std::filesystem::path& file : chain) json.value(file.string());
    json.end_array();
    json.field("kind", kind_name(info.kind));
    json.field("id", hex(info.id));
    json.field("generation", std::uint64_t{info.generation});
    json.field("pages_written", std::uint64_t{info.pages_written});
    json.field("zero_pages", std::uint64_t{info.zero_pages});
    json.field("bytes_written", std::uint64_t{info.bytes_written});
    json.end_object();
    json.finish();
    return kOk;
  }
  std::printf("compacted %zu file%s ending at %s into %s\n", chain.size(),
              chain.size() == 1 ? "" : "s", latest.c_str(), out.c_str());
  std::printf("%s snapshot %s, generation %llu: %llu data pages, %s\n", kind_name(info.kind),
              hex(info.id).c_str(), static_cast<unsigned long long>(info.generation),
              static_cast<unsigned long long>(info.pages_written),
              human_bytes(info.bytes_written).c_str());
  return kOk;
}

}  // namespace reheap::snap
