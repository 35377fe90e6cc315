#pragma once
// `vigil camera add|list|remove`: the cameras vigild pulls, through vigild's HTTP API
// (/api/v1/cameras) with an admin token, so every change is checked by vigild as the API's are.
// Errors: returns an exit code (common/exit_codes.hpp); prints why.
#include <string>
#include <vector>

namespace vigil::client {

// TOKEN: the token `vigil` was given (--token, VIGIL_TOKEN, --token-file); empty: DATA/admin.token.
int camera_main(const std::string& token, const std::vector<std::string>& args);

}  // namespace vigil::client
