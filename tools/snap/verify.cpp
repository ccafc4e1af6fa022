// `reheap-snap verify FILE...`: reads every byte of each file (file_check.h), which checks the
// header, each run's structure and checksum, the end record and the trailer's digest.
// With --chain, each file's parents are verified as well, and a broken link is a bad file.
#include <algorithm>
#include <cstdio>
#include <iostream>
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

// The files to verify: each argument, preceded with --chain by its parents (each file once,
// in the order first met, so shared parents are read once).
std::vector<Outcome> verify_all(const Options& options) {
  std::vector<Outcome> outcomes;
  std::vector<std::filesystem::path> done;
  const auto verify_once = [&](const std::filesystem::path& file) {
    if (std::find(done.begin(), done.end(), file) != done.end()) return;
    done.push_back(file);
    outcomes.push_back(verify_file(file, options.progress));
  };
  for (const std::filesystem::path& file : options.files) {
    if (!options.chain) {
      verify_once(file);
      continue;
    }
    try {
      for (const std::filesystem::path& link : snapshot_chain(file)) verify_once(link);
    } catch (const SnapshotError& error) {
      // The chain cannot be followed: verify what is there, and mark the file bad for its chain.
      verify_once(file);
      auto it = std::find_if(outcomes.begin(), outcomes.end(),
                             [&](const Outcome& o) { return o.file == file; });
      if (it->code == kOk) {
        it->code = code_of(error.code());
        it->error = to_string(error.code());
        it->message = error.what();
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
