// reheap-snap run as a separate process by the snapshot tests (the tool's own tests, and the
// special-file tests that must prove a command ends instead of hanging).
//
// The path of the tool comes from REHEAP_SNAP_PATH, which tools/snap/CMakeLists.txt defines for
// this suite when the tool is built.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace reheap::snaptest {

struct ToolResult {
  int exit_code = -1;  // 128 + signal when killed
  std::string out;
  std::string err;
  bool timed_out = false;  // killed when the timeout passed
  std::chrono::milliseconds elapsed{0};
};

// Whether this suite was built with the tool.
bool tool_built();

// Runs reheap-snap with `args`, capturing stdout and stderr (read together with poll(), so that
// neither pipe can fill up and stall the child). With a non-zero `timeout`, a run that has not
// ended by then is killed with SIGKILL and reported as timed out, so that a hang fails a test
// instead of stopping the suite.
ToolResult run_tool(const std::vector<std::string>& args,
                    std::chrono::milliseconds timeout = std::chrono::milliseconds{0});

// The same, run in `directory`, for arguments that are paths relative to it.
ToolResult run_tool_in(const std::filesystem::path& directory, const std::vector<std::string>& args);

}  // namespace reheap::snaptest
