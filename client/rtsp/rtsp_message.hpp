#pragma once
// RTSP/1.0 (RFC 2326) messages as the session needs them: requests written, responses parsed
// from the bytes read so far, and the WWW-Authenticate challenge answered (Basic, Digest MD5).
// Thread: any. Errors: parse_response returns nullopt for "need more bytes" and sets WHY (and
// returns nullopt) for a malformed response.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace vigil::client::rtsp {
}  // namespace vigil::client::rtsp
