// Crash bundles to damage (see bundle_kit.h).
#include "bundle_kit.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace replay_test {

namespace fs = std::filesystem;

fs::path record_bundle(const fs::path& directory, unsigned notes, const std::vector<std::string>& env) {
#ifdef REHEAP_REPLAY_PROGRAM
  std::vector<std::string> all = env;
  all.push_back("REPLAY_PROGRAM_NOTES=" + std::to_string(notes));
  const BoundedRun recorded = run_bounded({REHEAP_REPLAY_PROGRAM, directory.string()}, all);
  // The program prints the bundle's path on a line of its own (the runtime's line on the
  // failure, on stderr, may come first).
  const std::size_t at = recorded.out.find(directory.string());
  if (at == std::string::npos) {
    ADD_FAILURE() << "no crash bundle recorded:\n" << recorded.out;
    return {};
  }
  fs::path bundle = recorded.out.substr(at, recorded.out.find('\n', at) - at);
  EXPECT_TRUE(fs::exists(bundle / "manifest.json")) << recorded.out;
  return bundle;
#else
  (void)directory;
  (void)notes;
  (void)env;
  return {};
#endif
}

void copy_bundle(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  for (const fs::directory_entry& entry : fs::directory_iterator(from)) {
    fs::copy_file(entry.path(), to / entry.path().filename());
  }
}

fs::path log_of(const fs::path& bundle) {
  for (const fs::directory_entry& entry : fs::directory_iterator(bundle)) {
    if (entry.path().extension() == ".rlog") return entry.path();
  }
  ADD_FAILURE() << "no log in " << bundle;
  return bundle / "log-1.rlog";
}

std::vector<std::size_t> block_ends(const std::string& log) {
  std::vector<std::size_t> ends;
  const auto u32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    std::memcpy(&v, log.data() + at, 4);
    return v;
  };
  if (log.size() < 16) return ends;
  std::size_t at = u32(12);
  ends.push_back(at);
  while (at + 28 <= log.size()) {
    at += 28 + u32(at + 16);
    if (at > log.size()) break;
    ends.push_back(at);
  }
  return ends;
}

std::string read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_bytes(const fs::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool replace_in(const fs::path& file, const std::string& from, const std::string& to) {
  std::string text = read_bytes(file);
  const std::size_t at = text.find(from);
  if (at == std::string::npos) return false;
  text.replace(at, from.size(), to);
  write_bytes(file, text);
  return true;
}

BoundedRun snap_replay(const fs::path& bundle, const std::vector<std::string>& args,
                       const std::vector<std::string>& env, const Bounds& bounds) {
#ifdef REHEAP_SNAP_PATH
  std::vector<std::string> argv = {REHEAP_SNAP_PATH, "replay", bundle.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_bounded(argv, env, bounds);
#else
  (void)bundle;
  (void)args;
  (void)env;
  (void)bounds;
  return {};
#endif
}

}  // namespace replay_test
