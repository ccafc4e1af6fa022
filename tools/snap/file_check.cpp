// Reading a whole snapshot to check it (see file_check.h).
#include "file_check.h"

#include <exception>

#include "progress.h"

namespace reheap::snap {
namespace {

void read_whole_file(const std::filesystem::path& file, bool force_progress, FileCheck& out) {
  SnapshotReader reader(file);
  out.kind = reader.header().kind;
  out.generation = reader.header().generation;
  Progress progress("verify " + file.filename().string(), reader.size(), force_progress);
  PageRun run;
  while (reader.next(run)) {
    ++out.runs;
    if (run.zero) {
      out.zero_pages += run.pages;
    } else {
      out.data_pages += run.pages;
      reader.skip_data();
    }
    progress.update(reader.position());
  }
}

}  // namespace

int code_of(SnapshotErrc errc) {
  return errc == SnapshotErrc::kIo || errc == SnapshotErrc::kNoSpace ? kError : kNegative;
}

FileCheck check_file(const std::filesystem::path& file, bool force_progress) {
  FileCheck out;
  try {
    read_whole_file(file, force_progress, out);
  } catch (const SnapshotError& error) {
    out.code = code_of(error.code());
    out.error = to_string(error.code());
    out.message = error.what();
  } catch (const std::exception& error) {
    out.code = kError;
    out.error = "error";
    out.message = error.what();
  }
  return out;
}

}  // namespace reheap::snap
