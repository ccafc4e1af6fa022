// Replay support for the ledger's tests (see replay_support.h).
#include "replay_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include <gtest/gtest.h>

#include "protocol.h"
#include "reheap/recording_log.h"

namespace ledger::test {
namespace {

// Runs `command`, collecting what it prints in `output`; returns its exit status (-1 if none).
int run(const std::string& command, std::string* output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output->append(buffer, n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::filesystem::path find_crash_directory(const std::filesystem::path& root) {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.is_directory() && entry.path().filename().string().starts_with("crash-")) return entry.path();
  }
  return {};
}

// The failing event, its hook and what(), and the time it was given: read from the log, which
// is what the replay will deliver, rather than from manifest.json.
bool read_failure(CrashBundle* b, std::string* why) {
  reheap::LogReader reader(b->path);
  reheap::LogRecord r;
  std::int64_t now_ns = 0;
  std::uint64_t now_event = 0;
  while (reader.next(r)) {
    if (r.kind == reheap::RecordKind::kSystemNow) {
      now_ns = static_cast<std::int64_t>(r.value[0]);
      now_event = reader.position();
    } else if (r.kind == reheap::RecordKind::kEventFailed) {
      b->failing_event = reader.position();
      b->hook = r.text;
      b->failure = r.detail;
    }
  }
  if (b->failing_event == 0 || now_event != b->failing_event) {
    *why = "the log of " + b->path.string() + " has no failing event that read the time";
    return false;
  }
  b->failing_now = Clock::time_point(std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(now_ns)));
  return true;
}

// The temporary directory of the run, removed when the test binary exits.
struct RunDirectory {
  std::filesystem::path path;
  ~RunDirectory() {
    std::error_code ignored;
    if (!path.empty()) std::filesystem::remove_all(path, ignored);
  }
};

std::optional<CrashBundle> make_bundle(std::string* why) {
  CrashBundle b;
  if (const char* given = std::getenv("LEDGER_BUNDLE"); given != nullptr && *given != '\0') {
    b.path = given;
  } else {
    static RunDirectory run_directory;
    run_directory.path = std::filesystem::temp_directory_path() / ("reheap-ledger-" + std::to_string(getpid()));
    std::filesystem::remove_all(run_directory.path);
    // A shorter dormancy than the program's default makes the bug come sooner (main.cpp): a few
    // seconds and a few hundred settlements.
    std::string output;
    const int status = run(std::string(LEDGER_PROGRAM) + " --record " + run_directory.path.string() +
                               " --dormant-ms 1000 --seconds 300",
                           &output);
    if (status != 1) {
      *why = "the ledger program did not fail (exit status " + std::to_string(status) + "):\n" + output;
      return std::nullopt;
    }
    b.path = find_crash_directory(run_directory.path);
    if (b.path.empty()) {
      *why = "the ledger program failed but left no crash bundle:\n" + output;
      return std::nullopt;
    }
  }
  if (!read_failure(&b, why)) return std::nullopt;
  return b;
}

}  // namespace

std::optional<CrashBundle> crash_bundle(std::string* why) {
  static std::string error;
  static const std::optional<CrashBundle> bundle = make_bundle(&error);
  *why = error;
  return bundle;
}

AccountId first_dormant_in_batch(const Ledger& ledger, Clock::time_point now) {
  const Book& book = ledger.book();
  const auto dormant = [&](AccountId id) {
    const auto it = book.accounts.find(id);
    return it != book.accounts.end() && now - it->second.last_activity >= ledger.config().dormant_after;
  };
  for (const PendingTransfer& t : book.pending) {
    if (dormant(t.from)) return t.from;
    if (dormant(t.to)) return t.to;
  }
  return 0;
}

ExpectedBatch expected_batch(const Book& book) {
  ExpectedBatch e;
  for (const PendingTransfer& t : book.pending) {
    for (const AccountId id : {t.from, t.to}) e.balances.emplace(id, book.accounts.at(id).balance_cents);
  }
  for (const PendingTransfer& t : book.pending) {
    if (e.balances[t.from] < t.cents) {
      ++e.bounced;
      continue;
    }
    e.balances[t.from] -= t.cents;
    e.balances[t.to] += t.cents;
    e.moved.insert(t.from);
    e.moved.insert(t.to);
    ++e.posted;
  }
  return e;
}

std::optional<DormantPayee> transfer_to_a_payee_going_dormant(reheap::testing::TestRuntime& rt) {
  LedgerConfig config;
  config.settle_every = std::chrono::milliseconds(5);
  config.dormant_after = std::chrono::milliseconds(100);
  DormantPayee d;
  d.bank = rt.spawn<Ledger>(config);
  rt.run();
  const std::optional<AccountOpened> payer = rt.ask<AccountOpened>(d.bank, OpenAccount{"payer"});
  const std::optional<AccountOpened> payee = rt.ask<AccountOpened>(d.bank, OpenAccount{"payee"});
  EXPECT_TRUE(payer && payee) << "the ledger did not open the accounts";
  if (!payer || !payee) return std::nullopt;
  d.payer = payer->account;
  d.payee = payee->account;
  rt.send(d.bank, Deposit{d.payer, 1'000});
  rt.advance(std::chrono::milliseconds(50));
  rt.send(d.bank, Deposit{d.payer, 1'000});  // the payer stays active; the payee does not
  rt.advance(std::chrono::milliseconds(46));  // 19 clean settlements
  rt.send(d.bank, Transfer{d.payer, d.payee, 500});
  return d;
}

}  // namespace ledger::test
