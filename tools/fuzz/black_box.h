// BlackBox: the input being run, kept where it survives the process however the process dies.
//
// libFuzzer writes a crash-* artefact from its signal and sanitizer callbacks. An input that
// breaks the process itself gets none: a restored heap whose state lies can make its destruction
// madvise(MADV_DONTNEED) far past its chunks, over the sanitizer's and libFuzzer's own memory and
// the stack, and then the handlers crash too and the shell reports a bare "Segmentation fault".
// So before running an input the target copies it, with the mutation that made it, into a
// MAP_SHARED mapping of a file: the kernel keeps a shared file page's contents whatever the
// process does to its mappings or however it ends. A process that ends normally removes its
// file; a file left behind with an input marked running names the input that killed it.
//
// One file per process (blackbox-<pid>.bin in REHEAP_FUZZ_BLACKBOX_DIR), so that libFuzzer's
// -fork workers and merge processes do not overwrite each other's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace reheap_fuzz {

// Records into REHEAP_FUZZ_BLACKBOX_DIR when that is set; does nothing otherwise.
void black_box_begin(const std::uint8_t* data, std::size_t size, const char* made_by);
// Where the current input has got to ("reader", "restore", "using the heap", "destroy", ...).
void black_box_stage(const char* stage);
void black_box_end();

struct RecordedInput {
  std::vector<std::uint8_t> bytes;
  std::string made_by;
  std::string stage;
  bool truncated = false;  // longer than the box holds; `bytes` is its start
};

// Reads a black box file; false if it does not hold an input that was running when its process
// ended (the process ended normally, or between inputs).
bool read_black_box(const std::string& path, RecordedInput& out);

}  // namespace reheap_fuzz
