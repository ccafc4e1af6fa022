// `reheap-snap verify FILE...`: reads every byte of each file (file_check.h), which checks the
// header, each run's structure and checksum, the end record and the trailer's digest.
// With --chain, each file's parents are verified as well, link by link (snapshot_parent), so
// that every readable file of a chain is checked even past a broken link; a file is only as good
// as its chain: a broken link is a bad file, and so is every file built on a bad one.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "command.h"
#include "file_check.h"
#include "json_writer.h"

namespace reheap::snap {
namespace {

struct Outcome : FileCheck {
  std::filesystem::path file;
};

Outcome verify_file(const std::filesystem::path& file, bool force_progress) {
  Outcome out;
  static_cast<FileCheck&>(out) = check_file(file, force_progress);
  out.file = file;
  return out;
}

// Marks a file that checked fine by itself as bad for its chain.
void fail_outcome(Outcome& outcome, SnapshotErrc errc, const std::string& message) {
  outcome.code = code_of(errc);
  outcome.error = to_string(errc);
  outcome.message = message;
}

// A file's identity however its path is spelled: relative or absolute, with "./" or "d/../d",
// through a symbolic link. A path that does not resolve is compared as written, made absolute.
std::filesystem::path identity_of(const std::filesystem::path& file) {
  std::error_code ec;
  std::filesystem::path canonical = std::filesystem::weakly_canonical(file, ec);
  if (!ec) return canonical;
  return std::filesystem::absolute(file, ec).lexically_normal();
}

// The files to verify: each argument, preceded with --chain by its parents, in the order first
// met, so that shared parents are read once. Each file is listed once, however often and under
// however many names it is met: a file given on the command line under its first name there (a
// script finds what it asked about), a parent not given under its path from its child
// (snapshot_parent). Listing it under each name met would report one file as several.
std::vector<Outcome> verify_all(const Options& options) {
  std::map<std::filesystem::path, std::filesystem::path> given;  // identity -> name given
  for (const std::filesystem::path& file : options.files) given.emplace(identity_of(file), file);
  std::vector<Outcome> outcomes;
  std::map<std::filesystem::path, std::size_t> listed;  // identity -> index in outcomes
  // The file's index in `outcomes` (indices, not references: the vector grows).
  const auto verify_once = [&](const std::filesystem::path& file) -> std::size_t {
    const std::filesystem::path identity = identity_of(file);
    const auto [at, first] = listed.emplace(identity, outcomes.size());
    if (first) {
      const auto name = given.find(identity);
      outcomes.push_back(verify_file(name != given.end() ? name->second : file, options.progress));
    }
    return at->second;
  };
  for (const std::filesystem::path& file : options.files) {
    if (!options.chain) {
      verify_once(file);
      continue;
    }
    // The links from the file toward its full snapshot, each followed as far as it goes: to a
    // full snapshot, to a file whose header cannot be read (its own check says why), or to a
    // broken link, which makes the file naming that parent bad. Listed oldest first, as a chain.
    std::vector<std::filesystem::path> links{file};
    std::optional<SnapshotError> broken;
    std::set<std::filesystem::path> on_walk{identity_of(file)};
    while (true) {
      std::optional<std::filesystem::path> parent;
      try {
        parent = snapshot_parent(links.back());
      } catch (const SnapshotError& error) {
        broken = error;
      }
      if (!parent) break;
      if (!on_walk.insert(identity_of(*parent)).second) {
        broken = SnapshotError(SnapshotErrc::kBrokenChain, links.back().string() + ": the chain of parents loops");
        break;
      }
      links.push_back(*parent);
    }
    std::vector<std::size_t> walk(links.size());
    for (std::size_t i = links.size(); i-- > 0;) walk[i] = verify_once(links[i]);
    if (broken && outcomes[walk.back()].code == kOk) {
      fail_outcome(outcomes[walk.back()], broken->code(), broken->what());
    }
    // An increment restores only through its parents: from the oldest file met, one that is
    // fine by itself but built on a bad file is bad too, and names it.
    for (std::size_t i = walk.size(); i-- > 1;) {
      const Outcome& parent = outcomes[walk[i]];
      Outcome& child = outcomes[walk[i - 1]];
      if (parent.code != kOk && child.code == kOk) {
        fail_outcome(child, SnapshotErrc::kBrokenChain,
                     child.file.string() + ": its parent " + parent.file.string() + " is bad (" +
                         parent.error + ")");
      }
    }
  }
  return outcomes;
}

void print_text(const std::vector<Outcome>& outcomes) {
  for (const Outcome& o : outcomes) {
    if (o.code == kOk) {
      std::printf("%s: ok (%s, generation %llu, %llu runs, %llu data pages, %llu zero pages)\n",
                  o.file.c_str(), kind_name(o.kind), static_cast<unsigned long long>(o.generation),
                  static_cast<unsigned long long>(o.runs),
                  static_cast<unsigned long long>(o.data_pages),
                  static_cast<unsigned long long>(o.zero_pages));
    } else {
      // The message names the file too (SnapshotError's text starts with it): once is enough.
      const std::string named = o.file.string() + ": ";
      const std::string message = o.message.rfind(named, 0) == 0 ? o.message.substr(named.size()) : o.message;
      std::printf("%s: %s: %s\n", o.file.c_str(), o.error.c_str(), message.c_str());
    }
  }
}

void print_json(const std::vector<Outcome>& outcomes, int code) {
  JsonWriter json(std::cout);
  json.begin_object();
  json.field("ok", code == kOk);
  json.key("files");
  json.begin_array();
  for (const Outcome& o : outcomes) {
    json.begin_object();
    json.field("file", o.file.string());
    json.field("ok", o.code == kOk);
    if (o.code == kOk) {
      json.field("kind", kind_name(o.kind));
      json.field("generation", std::uint64_t{o.generation});
      json.field("runs", o.runs);
      json.field("data_pages", o.data_pages);
      json.field("zero_pages", o.zero_pages);
    } else {
      json.field("error", o.error);
      json.field("message", o.message);
    }
    json.end_object();
  }
  json.end_array();
  json.end_object();
  json.finish();
}

}  // namespace

int run_verify(const Options& options) {
  const std::vector<Outcome> outcomes = verify_all(options);
  int code = kOk;
  for (const Outcome& o : outcomes) code = std::max(code, o.code);
  if (options.json) {
    print_json(outcomes, code);
  } else {
    print_text(outcomes);
  }
  return code;
}

}  // namespace reheap::snap
