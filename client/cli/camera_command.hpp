#pragma once
// `vigil camera add|list|remove`: the cameras vigild pulls, kept in its catalog. The catalog is
// reached with --db URL (an external PostgreSQL, as given to vigild) or, by default, through the
// embedded cluster of vigild's data directory (--data DIR, default ./data).
#include <string>
#include <vector>

namespace vigil::client {

int camera_main(const std::vector<std::string>& args);

}  // namespace vigil::client
