#pragma once
// How the administering commands (`vigil camera`, `vigil token`) reach vigild's HTTP API: its
// address from --http HOST:PORT (https://HOST:PORT for HTTPS) or from DATA/run/endpoints.json
// (vigild writes it at start and removes it at a clean stop; "http_tls" there means HTTPS), and a token: the one given to `vigil` (--token, VIGIL_TOKEN,
// --token-file) or else DATA/admin.token. Answers that are not a success become one line on
// stderr and the exit code every command uses for them.
// Thread: the command's. Errors: connect_vigild_api throws VigildUnreachable (no vigild) and
// std::runtime_error; exit_for_answer prints and returns.
#include <boost/program_options/options_description.hpp>
#include <string>
#include <string_view>

#include "client/wire/http_client.hpp"

namespace vigil::client {

struct VigildApiOptions {
  std::string data = "./data";  // vigild's data directory
  std::string http;             // vigild's HTTP address; empty: from DATA/run/endpoints.json
};

// Adds --data DIR and --http HOST:PORT to OPTIONS, stored into TARGET.
void add_vigild_api_options(boost::program_options::options_description& options, VigildApiOptions& target);

// A client of vigild's HTTP API. TOKEN: the token `vigil` was given; empty: DATA/admin.token.
HttpClient connect_vigild_api(const VigildApiOptions& options, const std::string& token);

// The exit code for a failed ANSWER (status >= 300), its reason printed after COMMAND: 401/403:
// the token lacks ROLE ("an admin", "a viewer or admin") (exit_code::kRefused); 400:
// exit_code::kUsage; else kFailed.
int exit_for_answer(std::string_view command, const HttpAnswer& answer, std::string_view role = "an admin");
// The "error" of a JSON error body, or the body itself.
std::string error_text(const std::string& body);

// A UTC time as 2026-11-24T02:03:17Z.
std::string utc_time(std::int64_t us);

}  // namespace vigil::client
