// Which program `replay` runs to replay a bundle, and why.
//
// A bundle may come from elsewhere, and its manifest names any path it likes: running that path
// as given would run whatever the bundle's author chose. So the program is the one the user
// names (--program PATH: the user's choice, run as given, its build reported), or else the one
// the manifest names only if it is the recording program - a 64-bit ELF executable whose GNU
// build-id, read from its notes without running it (elf_build_id.h), is the bundle's - given as
// an absolute path outside the bundle (a bundle never carries its program). That file is kept
// open from the check to the run and executed through its descriptor (fexecve), so no other file
// can take its name in between. Anything else is refused before anything runs, saying what to
// give with --program.
#pragma once

#include <filesystem>
#include <string>

namespace reheap::snap {

struct ReplayProgram {
  std::filesystem::path path;
  int fd = -1;       // the checked executable when the manifest named it (fexecve), else -1
  std::string why;   // "given with --program ...", "the program manifest.json names: ..."
  ReplayProgram() = default;
  ReplayProgram(const ReplayProgram&) = delete;
  ReplayProgram& operator=(const ReplayProgram&) = delete;
  ReplayProgram(ReplayProgram&& other) noexcept;
  ~ReplayProgram();
};

struct ProgramRefusal {
  int exit_code;     // kUsage (nothing names a program) or kError
  std::string what;  // the whole error line
};

// The program to run for a bundle recorded by build `bundle_build`, or why none is run (thrown as
// ProgramRefusal). `given`: --program's path ("" if not given); `named`: the manifest's.
ReplayProgram choose_replay_program(const std::filesystem::path& given, const std::string& named,
                                    const std::filesystem::path& manifest_file, const std::string& bundle_build);

}  // namespace reheap::snap
