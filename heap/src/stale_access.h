// Checked builds: a read or write through a stale pointer into a destroyed heap faults (its
// chunks are inaccessible while they wait in the zone's quarantine, see zone_impl.h). The report
// installed here names the heap the address belonged to before the previous SIGSEGV handler (the
// default action, a sanitizer's or the program's own) takes over, so the crash says what
// happened rather than only where.
#pragma once

namespace reheap::detail {

// Installs the SIGSEGV report, chaining to the handler installed before. Idempotent.
void install_stale_access_report() noexcept;

}  // namespace reheap::detail
