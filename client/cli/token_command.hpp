#pragma once
// `vigil token create|list|revoke`: vigild's API tokens (docs/openapi.yaml, "Authentication"),
// through its HTTP API (/api/v1/tokens) with an admin token. An operator with access to the
// server always has one: vigild keeps DATA/admin.token, and writes a new one at start when that
// one was revoked. Errors: returns an exit code (common/exit_codes.hpp); prints why.
#include <string>
#include <vector>

namespace vigil::client {

// TOKEN: the token `vigil` was given (--token, VIGIL_TOKEN, --token-file); empty: DATA/admin.token.
int token_main(const std::string& token, const std::vector<std::string>& args);

}  // namespace vigil::client
