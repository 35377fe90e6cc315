#pragma once
// `vigil token create|list|revoke`: the API tokens of vigild's catalog (docs/openapi.yaml,
// "Authentication"). Works on the catalog directly, like `vigil camera` (--data DIR or --db URL),
// so an operator with access to the server can always mint an admin token.
#include <string>
#include <vector>

namespace vigil::client {

int token_main(const std::vector<std::string>& args);

}  // namespace vigil::client
