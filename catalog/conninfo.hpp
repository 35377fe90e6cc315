#pragma once
// libpq connection strings, and the limits vigild puts on its own sessions (docs/catalog.md,
// "Session limits"). Without them a connection to a server that stops answering — a frozen
// PostgreSQL, a partitioned network, a proxy that holds the bytes — waits for ever: libpq has no
// deadline of its own, and TCP keeps retrying for about 15 minutes. Worse, the server side of a
// session cut off in the middle of a transaction keeps that transaction open, and with it its row
// and advisory locks: the sweeper's lock or a camera row held FOR SHARE, and no other node could
// ever take the partitioned node's cameras (docs/nodes.md, "A node cut off from PostgreSQL").
// Thread: any. Errors: none (a conninfo libpq cannot parse is returned as it is: connecting says why).
#include <string>
#include <utility>
#include <vector>

namespace vigil::catalog {

using ConninfoSettings = std::vector<std::pair<std::string, std::string>>;

// CONNINFO (key=value or a postgres[ql]:// URI) as key=value, with SETTINGS (keyword, value)
// replacing what it names.
std::string with_settings(const std::string& conninfo, const ConninfoSettings& settings);

// What a session of vigild's runtime threads (the batcher, the camera manager, the catalog pool,
// retention) connects with: CONNINFO plus, unless it names them already, connect_timeout=SECONDS,
// TCP keepalives (an idle connection to a vanished host noticed within about 11 s),
// tcp_user_timeout=10000 (unacknowledged data for 10 s drops the connection), and
// idle_in_transaction_session_timeout = 10 s on the server side (options=-c …): a session whose
// client has not sent its next statement for 10 s inside a transaction is ended by PostgreSQL
// itself, which releases its locks. vigild never waits inside a transaction for anything but the
// database, so its own sessions never come near it.
std::string with_session_limits(const std::string& conninfo, int connect_timeout_s);

constexpr int kIdleInTransactionTimeoutMs = 10'000;

}  // namespace vigil::catalog
