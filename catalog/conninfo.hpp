#pragma once
// libpq connection strings. libpq waits for ever on a server that accepts the connection but never
// answers (a frozen PostgreSQL) unless connect_timeout is given; the threads that must stay
// responsive during a database outage (the batcher, the camera manager) connect with one.
// Thread: any. Errors: none.
#include <string>

namespace vigil::catalog {

// CONNINFO (key=value or a postgres[ql]:// URI) with connect_timeout=SECONDS, unless it names one.
std::string with_connect_timeout(const std::string& conninfo, int seconds);

}  // namespace vigil::catalog
