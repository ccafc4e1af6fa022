// `reheap-snap info FILE`: a snapshot's header and its parent chain, and whether the file is
// good.
//
// Reading only the header would be fast, but a header that parses says nothing about the pages
// and trailer behind it, and a report that looks complete invites the reader to trust the file.
// So info reads the whole file by default (file_check.h, the same check as `verify`) and exits 1
// when it is bad, still printing the header. --header-only skips the pages for a quick look at a
// large file; it then says "not verified" and exits with its own code (kUnverified), so that no
// script can take the answer for a good file. The parents named by the chain are listed from
// their headers only: `verify --chain` checks them.
#include <cstdio>
#include <iostream>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "command.h"
#include "file_check.h"
#include "json_writer.h"
#include "reheap/heap.h"
#include "reheap/size_class.h"

namespace reheap::snap {
namespace {

// The header's pointers into the program, by kind (reheap/program_refs.h).
struct RefCounts {
  std::uint64_t values = 0;
  std::uint64_t words = 0;
  std::uint64_t by_kind[3] = {};
};

RefCounts count_refs(const SnapshotHeader& h) {
  RefCounts out;
  for (const ProgramRef& r : h.program_refs) {
    ++out.values;
    out.words += r.words;
    out.by_kind[static_cast<unsigned>(r.kind)] += r.words;
  }
  return out;
}

struct ChainEntry {
  std::filesystem::path file;
  SnapshotKind kind = SnapshotKind::kFull;
  std::uint64_t generation = 0;
  std::uint64_t id = 0;
};

// The chain `file` closes, or why it is broken. Headers are read again for each file: the chain
// is short, and snapshot_chain() does not return them.
struct Chain {
  std::vector<ChainEntry> files;
  std::optional<SnapshotError> broken;
};

Chain load_chain(const std::filesystem::path& file) {
  Chain chain;
  try {
    for (const std::filesystem::path& link : snapshot_chain(file)) {
      const SnapshotHeader header = read_snapshot_header(link);
      chain.files.push_back({link, header.kind, header.generation, header.id});
    }
  } catch (const SnapshotError& error) {
    chain.files.clear();
    chain.broken = error;
  }
  return chain;
}

std::uint64_t data_pages(const PageCounts& pages) {
  return std::accumulate(pages.by_class.begin(), pages.by_class.end(), std::uint64_t{0}) +
         pages.large + pages.huge + pages.metadata;
}

std::string limit_text(std::size_t limit) {
  return limit == kUnlimited ? "none" : human_bytes(limit);
}

// What info knows of the file's pages and trailer: checked (good or bad), or not read at all.
struct Verdict {
  bool checked = false;
  FileCheck check;
};

std::string verdict_text(const Verdict& v) {
  if (!v.checked) {
    return "not verified: only the header was read (--header-only); the page checksums and the "
           "trailer were not checked";
  }
  if (v.check.code == kOk) return "ok (every checksum and the trailer checked)";
  return "bad: " + v.check.error + ": " + v.check.message;
}

void print_text(const std::filesystem::path& file, const SnapshotHeader& h, const Chain& chain,
                const Verdict& verdict) {
  std::size_t by_use[3] = {0, 0, 0};
  std::size_t fresh = 0;
  for (const SnapshotChunk& chunk : h.chunks) {
    ++by_use[static_cast<unsigned>(chunk.use) % 3];
    if (chunk.fresh) ++fresh;
  }
  std::printf("file        %s\n", file.c_str());
  std::printf("kind        %s\n", kind_name(h.kind));
  std::printf("id          %s\n", hex(h.id).c_str());
  if (h.kind == SnapshotKind::kIncremental) {
    std::printf("parent      %s (%s)\n", hex(h.parent_id).c_str(), h.parent_file.c_str());
  }
  std::printf("generation  %llu\n", static_cast<unsigned long long>(h.generation));
  std::printf("created     %s\n", utc_time(h.created_unix_ns).c_str());
  std::printf("format      version %u, page %u B, chunk %s, checked build: %s\n",
              h.format_version, h.page_size, human_bytes(h.chunk_size).c_str(),
              h.checked_build ? "yes" : "no");
  std::printf("zone        %s, %s\n", hex(h.zone_base).c_str(), human_bytes(h.zone_size).c_str());
  std::printf("heap        id %llu, root %s\n", static_cast<unsigned long long>(h.heap_id), hex(h.root).c_str());
  std::printf("limit       %s\n", limit_text(h.limit_bytes).c_str());
  std::printf("committed   %s (%zu bytes)\n", human_bytes(h.committed_bytes).c_str(),
              h.committed_bytes);
  std::printf("chunks      %zu: class %zu, large %zu, huge %zu; fresh %zu\n", h.chunks.size(),
              by_use[0], by_use[1], by_use[2], fresh);
  const std::uint64_t pages = data_pages(h.pages);
  std::printf("pages       %llu with data (%s): metadata %llu, large %llu, huge %llu; zero %llu\n",
              static_cast<unsigned long long>(pages),
              human_bytes(pages * h.page_size).c_str(),
              static_cast<unsigned long long>(h.pages.metadata),
              static_cast<unsigned long long>(h.pages.large),
              static_cast<unsigned long long>(h.pages.huge),
              static_cast<unsigned long long>(h.pages.zero));
  std::printf("  %-5s %7s %10s\n", "class", "block", "pages");
  for (unsigned c = 0; c < kNumClasses; ++c) {
    if (h.pages.by_class[c] == 0) continue;
    std::printf("  %-5u %7u %10llu\n", c, kClassSize[c],
                static_cast<unsigned long long>(h.pages.by_class[c]));
  }
  std::printf("layout      %zu objects\n", h.layout.size());
  for (const LoadedObject& object : h.layout) {
    std::printf("  %s %s %s%s\n", hex(object.base).c_str(),
                object.build_id.empty() ? "(no build-id)" : object.build_id.c_str(),
                object.path.c_str(), object.main_executable ? " (main)" : "");
  }
  const RefCounts refs = count_refs(h);
  if (h.has_program_refs) {
    std::printf("prog refs   %llu values in %llu words: symbols %llu, literals %llu, unresolved %llu\n",
                static_cast<unsigned long long>(refs.values), static_cast<unsigned long long>(refs.words),
                static_cast<unsigned long long>(refs.by_kind[0]), static_cast<unsigned long long>(refs.by_kind[1]),
                static_cast<unsigned long long>(refs.by_kind[2]));
  } else {
    std::printf("prog refs   not listed (an older writer: restores only in the same layout)\n");
  }
  if (h.saved_by_node >= 0) {
    std::printf("saved by    node %lld, incarnation %lld\n", static_cast<long long>(h.saved_by_node),
                static_cast<long long>(h.saved_by_incarnation));
  }
  std::printf("tracking    %s\n", h.tracking.c_str());
  std::printf("verified    %s\n", verdict_text(verdict).c_str());
  if (chain.broken) {
    std::printf("chain       broken: %s\n", describe(*chain.broken).c_str());
    return;
  }
  std::printf("chain       %zu file%s\n", chain.files.size(), chain.files.size() == 1 ? "" : "s");
  for (const ChainEntry& entry : chain.files) {
    std::printf("  generation %-4llu %-11s %s\n",
                static_cast<unsigned long long>(entry.generation), kind_name(entry.kind),
                entry.file.c_str());
  }
}

void print_json(const std::filesystem::path& file, const SnapshotHeader& h, const Chain& chain,
                const Verdict& verdict) {
  JsonWriter json(std::cout);
  json.begin_object();
  json.field("file", file.string());
  json.field("format_version", h.format_version);
  json.field("kind", kind_name(h.kind));
  json.field("id", hex(h.id));
  json.field("parent_id", hex(h.parent_id));
  json.field("parent_file", h.parent_file);
  json.field("generation", std::uint64_t{h.generation});
  json.field("created_unix_ns", std::uint64_t{h.created_unix_ns});
  json.field("created", utc_time(h.created_unix_ns));
  json.field("page_size", h.page_size);
  json.field("chunk_size", std::uint64_t{h.chunk_size});
  json.field("zone_base", hex(h.zone_base));
  json.field("zone_size", std::uint64_t{h.zone_size});
  json.field("checked_build", h.checked_build);
  json.field("heap_id", h.heap_id);
  json.field("root", hex(h.root));
  json.key("limit");
  if (h.limit_bytes == kUnlimited) {
    json.null();
  } else {
    json.value(std::uint64_t{h.limit_bytes});
  }
  json.field("committed", std::uint64_t{h.committed_bytes});

  json.key("chunk_counts");
  json.begin_object();
  std::uint64_t by_use[3] = {0, 0, 0};
  std::uint64_t fresh = 0;
  for (const SnapshotChunk& chunk : h.chunks) {
    ++by_use[static_cast<unsigned>(chunk.use) % 3];
    if (chunk.fresh) ++fresh;
  }
  json.field("total", std::uint64_t{h.chunks.size()});
  json.field("class", by_use[0]);
  json.field("large", by_use[1]);
  json.field("huge", by_use[2]);
  json.field("fresh", fresh);
  json.end_object();
  json.key("chunks");
  json.begin_array();
  for (const SnapshotChunk& chunk : h.chunks) {
    json.begin_object();
    json.field("index", chunk.index);
    json.field("address", hex(h.zone_base + chunk.index * h.chunk_size));
    json.field("use", use_name(chunk.use));
    json.field("fresh", chunk.fresh);
    json.end_object();
  }
  json.end_array();

  json.key("pages");
  json.begin_object();
  json.field("data", data_pages(h.pages));
  json.key("by_class");
  json.begin_array();
  for (unsigned c = 0; c < kNumClasses; ++c) {
    json.begin_object();
    json.field("class", c);
    json.field("block_size", kClassSize[c]);
    json.field("pages", std::uint64_t{h.pages.by_class[c]});
    json.end_object();
  }
  json.end_array();
  json.field("large", std::uint64_t{h.pages.large});
  json.field("huge", std::uint64_t{h.pages.huge});
  json.field("metadata", std::uint64_t{h.pages.metadata});
  json.field("zero", std::uint64_t{h.pages.zero});
  json.end_object();

  json.key("layout");
  json.begin_array();
  for (const LoadedObject& object : h.layout) {
    json.begin_object();
    json.field("path", object.path);
    json.field("base", hex(object.base));
    json.field("build_id", object.build_id);
    json.field("main", object.main_executable);
    json.end_object();
  }
  json.end_array();
  const RefCounts refs = count_refs(h);
  json.key("program_refs");
  json.begin_object();
  json.field("listed", h.has_program_refs);
  json.field("values", refs.values);
  json.field("words", refs.words);
  json.field("symbols", refs.by_kind[0]);
  json.field("literals", refs.by_kind[1]);
  json.field("unresolved", refs.by_kind[2]);
  json.end_object();
  if (h.saved_by_node >= 0) {
    json.field("saved_by_node", static_cast<std::uint64_t>(h.saved_by_node));
    json.field("saved_by_incarnation", static_cast<std::uint64_t>(h.saved_by_incarnation));
  }
  json.field("tracking", h.tracking);

  json.key("verified");
  json.begin_object();
  json.field("checked", verdict.checked);
  if (verdict.checked) {
    json.field("ok", verdict.check.code == kOk);
    if (verdict.check.code != kOk) {
      json.field("error", verdict.check.error);
      json.field("message", verdict.check.message);
    }
  } else {
    json.key("ok");
    json.null();
  }
  json.end_object();

  json.key("chain");
  json.begin_object();
  json.field("ok", !chain.broken.has_value());
  if (chain.broken) {
    json.field("error", to_string(chain.broken->code()));
    json.field("message", std::string(chain.broken->what()));
  }
  json.key("files");
  json.begin_array();
  for (const ChainEntry& entry : chain.files) {
    json.begin_object();
    json.field("file", entry.file.string());
    json.field("kind", kind_name(entry.kind));
    json.field("generation", std::uint64_t{entry.generation});
    json.field("id", hex(entry.id));
    json.end_object();
  }
  json.end_array();
  json.end_object();
  json.end_object();
  json.finish();
}

}  // namespace

int run_info(const Options& options) {
  const std::filesystem::path& file = options.files.front();
  // An unreadable header is an error (kError, thrown to main): there is nothing to report.
  const SnapshotHeader header = read_snapshot_header(file);
  Verdict verdict;
  if (!options.header_only) {
    verdict.checked = true;
    verdict.check = check_file(file, options.progress);
  }
  const Chain chain = load_chain(file);
  if (options.json) {
    print_json(file, header, chain, verdict);
  } else {
    print_text(file, header, chain, verdict);
  }
  if (!verdict.checked) {
    report_error("not verified: " + file.string() +
                 ": only the header was read (--header-only); run reheap-snap verify to check "
                 "the page checksums and the trailer");
    return kUnverified;
  }
  if (verdict.check.code != kOk) {
    report_error(verdict.check.error + ": " + verdict.check.message);  // the message names the file
  }
  return verdict.check.code;
}

}  // namespace reheap::snap
