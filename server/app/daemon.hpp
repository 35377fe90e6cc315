#pragma once
// vigild's lifetime: lock the data directory, bring up the catalog (embedded PostgreSQL or
// --db), migrate it, serve the wire protocol and HTTP until SIGINT/SIGTERM, then stop in
// reverse order. Start-up code: throws; main() turns exceptions into one-line errors.
#include "server/app/config.hpp"

namespace vigil::server {

// Runs until a stop signal; returns the process exit code.
int run_daemon(const ServerConfig& config);

}  // namespace vigil::server
