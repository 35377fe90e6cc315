#pragma once
// `vigil camera discover`: ONVIF cameras found by WS-Discovery (onvif), their profiles and
// RTSP URIs, printed as a table or JSON (never with credentials); with --add each becomes a
// pulled camera of vigild (POST /api/v1/cameras: main stream as url, substream as substream_url).
// Errors: returns an exit code (common/exit_codes.hpp); prints why.
#include <string>
#include <string_view>
#include <vector>

namespace vigil::client {

// ARGS: the words after `camera discover`. TOKEN as for camera_main.
int discover_main(const std::string& token, const std::vector<std::string>& args);

// NAME as a camera name (^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$): other characters become '-',
// leading ones that cannot start a name are dropped; "camera" when nothing is left.
std::string camera_name_from(std::string_view name);

// URL (rtsp://host/...) with USER:PASSWORD@ put in, percent-encoded; URL as is for an empty user
// or one that has credentials already.
std::string with_credentials(const std::string& url, const std::string& user, const std::string& password);

}  // namespace vigil::client
