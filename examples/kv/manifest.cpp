// Manifest (see manifest.h).
#include "manifest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <tuple>

namespace kv {

namespace {

constexpr std::string_view kHeader = "reheap-kv manifest 2";
// The manifest of a reheap-kv whose shards kept no label: its files cannot be checked, and this
// build's Shard does not have their layout.
constexpr std::string_view kOlderHeader = "reheap-kv manifest 1";

std::uint64_t fnv1a(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what) {
  throw ManifestError(file.string() + ": " + what);
}

// A file name the manifest may hold: a plain name in the directory, nothing that walks out of it.
bool plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

bool is_shard_file(const std::filesystem::directory_entry& entry) {
  return entry.path().filename().string().rfind("shard-", 0) == 0 && entry.path().extension() == ".snap";
}

// Makes the directory's entries (a rename into or out of it) durable.
void sync_directory(const std::filesystem::path& dir) {
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

// Writes `text` to the new file `file` and closes it; on failure removes it too (a failed save
// leaves nothing behind) and throws, naming it.
void write_new_file(int fd, const std::string& text, const std::filesystem::path& file) {
  const auto give_up = [&](const char* step, int error) {
    ::close(fd);
    ::unlink(file.c_str());
    fail(file, std::string(step) + ": " + std::strerror(error));
  };
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) give_up("cannot write", n == 0 ? EIO : errno);
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) give_up("fsync", errno);
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(file.c_str());
    fail(file, std::string("close: ") + std::strerror(error));
  }
}

}  // namespace

std::string shard_file_name(std::uint32_t index, std::uint64_t generation) {
  return "shard-" + std::to_string(index) + "." + std::to_string(generation) + ".snap";
}

std::optional<Manifest> read_manifest(const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / kManifestName;
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(file, ec);
  if (ec || status.type() == std::filesystem::file_type::not_found) return std::nullopt;
  if (status.type() != std::filesystem::file_type::regular) fail(file, "not a regular file");
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, "cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  if (text.size() > (16u << 20)) fail(file, "too large to be a manifest");
  const std::size_t mark = text.rfind("checksum ");
  if (mark == std::string::npos) fail(file, "truncated: no checksum line");
  std::uint64_t stored = 0;
  if (std::sscanf(text.c_str() + mark, "checksum %16" SCNx64, &stored) != 1) fail(file, "bad checksum line");
  if (fnv1a(std::string_view(text).substr(0, mark)) != stored) fail(file, "checksum mismatch (corrupt)");

  Manifest m;
  std::istringstream lines(text.substr(0, mark));
  std::string line;
  if (!std::getline(lines, line)) fail(file, "not a reheap-kv manifest (foreign file)");
  if (line == kOlderHeader) {
    fail(file, "written by an older reheap-kv (manifest 1), whose shard files do not say which shard they hold; "
               "start that reheap-kv on it, or move the directory aside");
  }
  if (line != kHeader) fail(file, "not a reheap-kv manifest (foreign file)");
  bool have_set = false;
  bool have_node = false;
  bool have_generation = false;
  bool have_shards = false;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "set") {
      have_set = static_cast<bool>(fields >> std::hex >> m.set_id);
    } else if (key == "node") {
      have_node = static_cast<bool>(fields >> m.node);
    } else if (key == "generation") {
      have_generation = static_cast<bool>(fields >> m.generation);
    } else if (key == "shards") {
      have_shards = static_cast<bool>(fields >> m.shards) && m.shards > 0 && m.shards <= 4096;
    } else if (key == "saved_ms") {
      fields >> m.saved_ms;
    } else if (key == "shard") {
      std::uint32_t index = 0;
      if (!have_shards || !(fields >> index) || index >= m.shards) fail(file, "bad shard line: " + line);
      if (m.chains.empty()) m.chains.assign(m.shards, {});
      for (std::string name; fields >> name;) {
        if (!plain_name(name)) fail(file, "bad file name in shard line: " + name);
        m.chains[index].push_back(name);
      }
    } else if (!key.empty()) {
      fail(file, "unknown field: " + key);
    }
  }
  if (!have_set || !have_node || !have_generation || !have_shards) {
    fail(file, "missing one of set, node, generation and shards");
  }
  // An empty set names no file at all; a saved set names files for every shard.
  for (std::uint32_t i = 0; i < m.chains.size(); ++i) {
    if (m.chains[i].empty()) fail(file, "shard " + std::to_string(i) + " has no file");
  }
  return m;
}

void write_manifest(const std::filesystem::path& dir, const Manifest& m) {
  char set[40];
  std::snprintf(set, sizeof set, "\nset %016" PRIx64, m.set_id);
  std::string text(kHeader);
  text += set;
  text += "\nnode " + std::to_string(m.node);
  text += "\ngeneration " + std::to_string(m.generation) + "\nshards " + std::to_string(m.shards) +
          "\nsaved_ms " + std::to_string(m.saved_ms) + "\n";
  for (std::uint32_t i = 0; i < m.chains.size(); ++i) {
    text += "shard " + std::to_string(i);
    for (const std::string& name : m.chains[i]) text += " " + name;
    text += "\n";
  }
  char sum[40];
  std::snprintf(sum, sizeof sum, "checksum %016" PRIx64 "\n", fnv1a(text));
  text += sum;

  const std::filesystem::path tmp = dir / "manifest.tmp";
  const std::filesystem::path file = dir / kManifestName;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) fail(tmp, std::string("cannot create: ") + std::strerror(errno));
  write_new_file(fd, text, tmp);
  if (::rename(tmp.c_str(), file.c_str()) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    fail(file, std::string("rename: ") + std::strerror(error));
  }
  sync_directory(dir);
}

std::optional<ShardFileName> parse_shard_file_name(const std::string& name) {
  constexpr std::string_view kPrefix = "shard-";
  constexpr std::string_view kSuffix = ".snap";
  if (name.size() <= kPrefix.size() + kSuffix.size() || name.rfind(kPrefix, 0) != 0 ||
      name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
    return std::nullopt;
  }
  // <index>.<generation>, both decimal without sign or leading zeros, so that one file has one name.
  const std::string_view middle = std::string_view(name).substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  const std::size_t dot = middle.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  ShardFileName parsed;
  const auto number = [](std::string_view digits, auto& out) {
    if (digits.empty() || (digits.size() > 1 && digits[0] == '0')) return false;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
    return error == std::errc() && end == digits.data() + digits.size();
  };
  if (!number(middle.substr(0, dot), parsed.index) || !number(middle.substr(dot + 1), parsed.generation)) {
    return std::nullopt;
  }
  return parsed;
}

std::vector<std::string> shard_files(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (is_shard_file(entry)) names.push_back(entry.path().filename().string());
  }
  if (ec) fail(dir, "cannot list: " + ec.message());
  // By shard, then generation (shard-2 before shard-10), the names that say neither last.
  const auto key = [](const std::string& name) {
    const std::optional<ShardFileName> parsed = parse_shard_file_name(name);
    return std::make_tuple(!parsed, parsed ? parsed->index : 0, parsed ? parsed->generation : 0, name);
  };
  std::sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) { return key(a) < key(b); });
  return names;
}

std::uint64_t free_generation(const std::filesystem::path& dir, std::uint32_t shards, std::uint64_t after) {
  for (std::uint64_t generation = after + 1;; ++generation) {
    bool free = true;
    for (std::uint32_t i = 0; i < shards && free; ++i) {
      std::error_code ec;
      const auto status = std::filesystem::symlink_status(dir / shard_file_name(i, generation), ec);
      // A name that cannot even be looked at (file_type::none) counts as free: the save's write
      // there fails and says why, rather than this loop running forever.
      free = status.type() == std::filesystem::file_type::not_found || status.type() == std::filesystem::file_type::none;
    }
    if (free) return generation;
  }
}

std::uint64_t newest_file_generation(const std::filesystem::path& dir) {
  std::uint64_t newest = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (!is_shard_file(entry)) continue;
    if (const auto parsed = parse_shard_file_name(entry.path().filename().string())) {
      newest = std::max(newest, parsed->generation);
    }
  }
  return newest;
}

std::filesystem::path set_aside_saved_set(const std::filesystem::path& dir) {
  std::filesystem::path kept;
  for (unsigned n = 1;; ++n) {
    kept = dir / ("unrestorable-" + std::to_string(n));
    if (::mkdir(kept.c_str(), 0755) == 0) break;
    if (errno != EEXIST) fail(kept, std::string("cannot create: ") + std::strerror(errno));
  }
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (is_shard_file(entry)) files.push_back(entry.path());
  }
  if (ec) fail(dir, "cannot list: " + ec.message());
  // The manifest last: until it moves, a start without --ignore-bad-snapshot still refuses,
  // naming whichever file it misses, rather than starting empty.
  if (std::filesystem::exists(dir / kManifestName, ec)) files.push_back(dir / kManifestName);
  for (const std::filesystem::path& file : files) {
    const std::filesystem::path to = kept / file.filename();
    if (::rename(file.c_str(), to.c_str()) != 0) {
      fail(file, "cannot move into " + kept.string() + ": " + std::strerror(errno));
    }
  }
  sync_directory(kept);
  sync_directory(dir);
  return kept;
}

}  // namespace kv
