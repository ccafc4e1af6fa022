// Choosing the program a replay runs (see program_choice.h).
#include "program_choice.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "command.h"
#include "elf_build_id.h"
#include "recording/recording_file.h"  // runtime/src: file_type_name

namespace reheap::snap {
namespace {

// Twelve hex digits tell two builds apart in a message; the whole id is in the manifest.
std::string short_id(const std::string& id) { return id.size() > 12 ? id.substr(0, 12) : id; }

// An executable opened for its build-id and, when the manifest named it, for fexecve.
struct OpenedProgram {
  int fd = -1;
  std::uint64_t size = 0;
  std::string problem;  // why it cannot be opened or run ("" if it can)
};

OpenedProgram open_program(const std::filesystem::path& file) {
  OpenedProgram out;
  struct stat st {};
  // The name's type before open(), and O_NONBLOCK: a FIFO never blocks the open, a device is
  // never opened.
  if (::stat(file.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    out.problem = std::string("it is a ") + detail::recording::file_type_name(st.st_mode) + ", not a regular file";
    return out;
  }
  out.fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (out.fd < 0) {
    out.problem = std::string("it cannot be opened: ") + std::strerror(errno);
    return out;
  }
  if (::fstat(out.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    out.problem = std::string("it is a ") + detail::recording::file_type_name(st.st_mode) + ", not a regular file";
  } else if (::access(file.c_str(), X_OK) != 0) {
    out.problem = std::string("it cannot be executed: ") + std::strerror(errno);
  }
  out.size = static_cast<std::uint64_t>(st.st_size);
  return out;
}

// Whether `program` lies under `bundle` (both resolved: links and ".." cannot hide it).
bool inside(const std::filesystem::path& program, const std::filesystem::path& bundle) {
  std::error_code ignored;
  const std::filesystem::path p = std::filesystem::weakly_canonical(program, ignored);
  const std::filesystem::path b = std::filesystem::weakly_canonical(bundle, ignored);
  const std::filesystem::path relative = p.lexically_relative(b);
  return !relative.empty() && *relative.begin() != "..";
}

std::string build_note(const ElfBuildId& id, const std::string& bundle_build) {
  if (!id.elf || id.build_id.empty()) return id.problem + ": its build is not checked";
  if (id.build_id == bundle_build) return "build " + short_id(id.build_id) + ", the bundle's";
  return "build " + short_id(id.build_id) + ", while the bundle was recorded by build " +
         (bundle_build.empty() ? std::string("(none)") : short_id(bundle_build)) + ": the replay may diverge";
}

}  // namespace

ReplayProgram::ReplayProgram(ReplayProgram&& other) noexcept
    : path(std::move(other.path)), fd(other.fd), why(std::move(other.why)) {
  other.fd = -1;
}

ReplayProgram::~ReplayProgram() {
  if (fd >= 0) ::close(fd);
}

ReplayProgram choose_replay_program(const std::filesystem::path& given, const std::string& named,
                                    const std::filesystem::path& manifest_file, const std::string& bundle_build) {
  ReplayProgram out;
  if (!given.empty()) {
    // The user's choice: run as given (a script or a wrapper too), with its build said.
    const OpenedProgram opened = open_program(given);
    if (!opened.problem.empty()) {
      if (opened.fd >= 0) ::close(opened.fd);
      throw ProgramRefusal{kError, "cannot run " + given.string() + " (--program): " + opened.problem};
    }
    const ElfBuildId id = read_elf_build_id(opened.fd, opened.size);
    ::close(opened.fd);
    out.path = given;
    out.why = "given with --program; " + build_note(id, bundle_build);
    return out;
  }
  const std::string advice = "; give the recording program, or a rebuild of it, with --program PATH";
  if (named.empty()) {
    throw ProgramRefusal{kUsage, manifest_file.string() + " does not name the recording program" + advice};
  }
  const std::string refused = manifest_file.string() + " names the program " + named + ", which is not run: ";
  const std::filesystem::path program(named);
  if (!program.is_absolute()) throw ProgramRefusal{kError, refused + "it is not an absolute path" + advice};
  if (inside(program, manifest_file.parent_path())) {
    throw ProgramRefusal{kError, refused + "it lies inside the bundle, and a bundle never carries its program" + advice};
  }
  if (bundle_build.empty()) {
    throw ProgramRefusal{kError, refused + "the bundle records no build id to check it against" + advice};
  }
  OpenedProgram opened = open_program(program);
  if (!opened.problem.empty()) {
    if (opened.fd >= 0) ::close(opened.fd);
    throw ProgramRefusal{kError, refused + opened.problem + advice};
  }
  out.fd = opened.fd;  // closed by `out` from here on
  const ElfBuildId id = read_elf_build_id(opened.fd, opened.size);
  if (!id.elf || id.build_id.empty()) throw ProgramRefusal{kError, refused + id.problem + advice};
  if (id.build_id != bundle_build) {
    throw ProgramRefusal{kError, refused + "its build id is " + short_id(id.build_id) +
                                     ", the bundle was recorded by build " + short_id(bundle_build) +
                                     " (another build, or another program, stands at that path)" + advice};
  }
  out.path = program;
  out.why = "the program " + manifest_file.filename().string() + " names, and its build id " +
            short_id(id.build_id) + " is the bundle's";
  return out;
}

}  // namespace reheap::snap
