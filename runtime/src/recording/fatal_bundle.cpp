// A fatal signal's crash bundle (see fatal_bundle.h). Everything below the prepare() runs in a
// signal handler: system calls from the async-signal-safe list and stack buffers only.
#include "recording/fatal_bundle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>

#include "recording/fatal_signal.h"
#include "recording/log_codec.h"
#include "recording/log_sinks.h"
#include "reheap/recording_log.h"

namespace reheap::detail::recording {
namespace {

using Bytes = std::span<const unsigned char>;

template <std::size_t N>
Bytes bytes_of(const SignalText<N>& text) noexcept {
  return Bytes(reinterpret_cast<const unsigned char*>(text.data()), text.size());
}

bool make_directory(const char* path) noexcept { return ::mkdir(path, 0755) == 0 || errno == EEXIST; }

// `directory`/ followed by the last component of `file`.
SignalText<kPathText> in_directory(const SignalText<kPathText>& directory, const char* file) noexcept {
  SignalText<kPathText> out;
  const char* slash = std::strrchr(file, '/');
  out.text(directory.data(), directory.size()).text("/").text(slash != nullptr ? slash + 1 : file);
  return out;
}

bool write_file(const char* path, std::initializer_list<Bytes> pieces) noexcept {
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = true;
  for (const Bytes piece : pieces) ok = ok && write_all(fd, piece.data(), piece.size()) == 0;
  ::close(fd);
  return ok;
}

bool copy_file(const char* from, const char* to) noexcept {
  const int in = ::open(from, O_RDONLY | O_CLOEXEC);
  if (in < 0) return false;
  // Never over an existing file: it may be a link to `from` itself, which truncating would empty.
  const int out = ::open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  bool ok = out >= 0;
  unsigned char buffer[4096];
  while (ok) {
    const ssize_t n = ::read(in, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = n == 0;
      break;
    }
    ok = write_all(out, buffer, static_cast<std::size_t>(n)) == 0;
  }
  ::close(in);
  if (out >= 0) ::close(out);
  return ok;
}

// Links: no more is written to these files by the dying process, so a link is as good as a copy.
bool link_or_copy(const char* from, const char* to) noexcept {
  if (::link(from, to) == 0) return true;
  return errno != EEXIST && copy_file(from, to);
}

// The block header of `committed`'s records, which end at an event's end (no continuation).
void committed_header(const LogWriter::Committed& committed, unsigned char (&header)[28]) noexcept {
  detail::recording::store_block_header(header, committed.events_before, committed.records,
                                        static_cast<std::uint32_t>(committed.body.size()),
                                        detail::recording::checksum64(committed.body.data(), committed.body.size()));
}

}  // namespace

bool FatalBundle::append_block(FileSegmentSink& file, const LogWriter::Committed& committed) noexcept {
  if (committed.records == 0) return false;
  unsigned char header[28];
  committed_header(committed, header);
  return file.append_in_signal_handler(std::initializer_list<Bytes>{Bytes(header), committed.body});
}

bool FatalBundle::write_ring_dump(std::span<const unsigned char> checkpoint, std::span<const unsigned char> ring,
                                  const LogWriter::Committed& committed) const noexcept {
  if (root_.empty()) return false;
  if (!make_directory(root_.c_str())) return false;
  SignalText<kPathText> dump;
  dump.text(root_.c_str()).text("/ring-").number(committed.last_event);
  // A directory of its own, never over an earlier dump's files.
  if (::mkdir(dump.data(), 0755) != 0) return false;
  if (!write_file(in_directory(dump, anchor_name_.c_str()).data(), {checkpoint})) return false;
  if (committed.records == 0) return write_file(in_directory(dump, log_name_.c_str()).data(), {ring});
  unsigned char header[28];
  committed_header(committed, header);
  return write_file(in_directory(dump, log_name_.c_str()).data(), {ring, Bytes(header), committed.body});
}

void FatalBundle::prepare(std::filesystem::path root, ManifestFrame manifest, std::string anchor_name,
                          std::string log_name) {
  root_ = std::move(root);
  manifest_ = std::move(manifest);
  anchor_name_ = std::move(anchor_name);
  log_name_ = std::move(log_name);
}

void FatalBundle::write(int signal, const siginfo_t& info, const Recording& r) const noexcept {
  if (r.writer == nullptr) return;
  const std::uint64_t event = r.writer->events();
  if (root_.empty()) {
    SignalText<256>()
        .text("reheap: ")
        .text(signal_name(signal))
        .text(" in ")
        .text(r.hook)
        .text(" of a recorded reactor (event ")
        .number(event)
        .text("); no crash bundle: its ring recording has no RecordingOptions::directory")
        .write_line(STDERR_FILENO);
    return;
  }

  SignalText<512> what;
  what.text("fatal signal ").text(signal_name(signal)).text(" (").text(signal_meaning(signal)).text(")");
  if (signal == SIGSEGV || signal == SIGBUS) {
    what.text(" at address ").number(reinterpret_cast<std::uintptr_t>(info.si_addr), 16);
  }
  unsigned char record[1024];
  const std::size_t record_size = LogWriter::encode_event_failed(record, r.hook, std::string_view(what.data(), what.size()));
  const Bytes failed(record, record_size);
  unsigned char header[28];
  Bytes body;
  const bool sealed = r.writer->seal_with(failed, header, &body);

  // A bundle of its own: a restarted reactor (ring mode) may fail again at the same event.
  SignalText<kPathText> bundle;
  bool ok = make_directory(root_.c_str());
  for (unsigned n = 1; ok; ++n) {
    bundle = SignalText<kPathText>();
    bundle.text(root_.c_str()).text("/crash-").number(event);
    if (n > 1) bundle.text(".").number(n);
    if (::mkdir(bundle.data(), 0755) == 0) break;
    ok = errno == EEXIST && n < 100;
  }
  int error = ok ? 0 : errno;
  const auto check = [&](bool done) {
    if (!done && error == 0) error = errno;
    ok = ok && done;
  };
  if (ok && r.file != nullptr) {
    if (sealed) check(r.file->append_in_signal_handler(std::initializer_list<Bytes>{Bytes(header), body, failed}));
    for (const std::filesystem::path& segment : r.file->segments()) {
      check(link_or_copy(segment.c_str(), in_directory(bundle, segment.c_str()).data()));
    }
    check(link_or_copy(r.anchor_file->c_str(), in_directory(bundle, r.anchor_file->c_str()).data()));
  } else if (ok) {
    check(write_file(in_directory(bundle, anchor_name_.c_str()).data(), {r.checkpoint}));
    if (sealed) {
      check(write_file(in_directory(bundle, log_name_.c_str()).data(), {r.ring, Bytes(header), body, failed}));
    } else {
      check(write_file(in_directory(bundle, log_name_.c_str()).data(), {r.ring}));
    }
  }
  if (ok) {
    SignalText<128> hook;
    hook.json(r.hook, std::strlen(r.hook));
    SignalText<640> failure;
    failure.json(what.data(), what.size());
    SignalText<32> number;
    number.number(event);
    const auto text = [](const std::string& s) { return Bytes(reinterpret_cast<const unsigned char*>(s.data()), s.size()); };
    const auto literal = [](const char* s) { return Bytes(reinterpret_cast<const unsigned char*>(s), std::strlen(s)); };
    check(write_file(in_directory(bundle, "manifest.json").data(),
                     {text(manifest_.head), bytes_of(hook), literal(ManifestFrame::kAfterHook), bytes_of(failure),
                      literal(ManifestFrame::kAfterFailure), bytes_of(number), text(manifest_.tail)}));
  }

  SignalText<kPathText + 256> line;
  line.text("reheap: ").text(signal_name(signal)).text(" in ").text(r.hook).text(" of a recorded reactor (event ").number(event);
  if (ok) {
    line.text("); crash bundle: ").text(bundle.data(), bundle.size());
    if (!sealed) line.text(" (its log ends before the event: the fault came while the log was being written)");
  } else {
    // strerrordesc_np, unlike strerror, reads no locale: safe here.
    line.text("); the crash bundle ").text(bundle.data(), bundle.size()).text(" could not be written: ").text(strerrordesc_np(error));
  }
  line.write_line(STDERR_FILENO);
}

}  // namespace reheap::detail::recording
