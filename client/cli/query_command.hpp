#pragma once
// `vigil query`: the events vigild holds (docs/openapi.yaml, /api/v1/events), filtered by camera,
// time, type, object class, frame zone, attributes and confidence, newest first, one line each
// with its clip; --clips DIR saves each recorded clip as an MP4 (the clip's export URL), so an
// investigator gets the video of every match in one command. Pages are followed up to --limit.
// Through vigild's HTTP API with a viewer (or admin) token. Errors: returns an exit code
// (common/exit_codes.hpp); prints why.
#include <string>
#include <vector>

namespace vigil::client {

// TOKEN: the token `vigil` was given (--token, VIGIL_TOKEN, --token-file); empty: DATA/admin.token.
int query_main(const std::string& token, const std::vector<std::string>& args);

}  // namespace vigil::client
