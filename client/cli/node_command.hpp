#pragma once
// `vigil node list|drain NAME|undrain NAME`: the vigild nodes sharing a catalog (docs/nodes.md),
// through any node's HTTP API (/api/v1/nodes) with an admin token (list: a viewer's). `drain`
// moves the node's cameras to other nodes make-before-break and waits until it owns none,
// printing the cameras moved of the total, or until --timeout (the node stays draining; undrain
// takes it back). Errors: returns an exit code (common/exit_codes.hpp); prints why.
#include <string>
#include <vector>

namespace vigil::client {

// TOKEN: the token `vigil` was given (--token, VIGIL_TOKEN, --token-file); empty: DATA/admin.token.
int node_main(const std::string& token, const std::vector<std::string>& args);

}  // namespace vigil::client
