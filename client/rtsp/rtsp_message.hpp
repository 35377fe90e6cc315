#pragma once
// RTSP/1.0 (RFC 2326) as the session needs it: the camera URL split into where to connect and
// whom to authenticate as, one message (a response, or a request the camera sends us) parsed
// from the bytes read so far, and the WWW-Authenticate challenge answered (Basic, or Digest with
// MD5 as RFC 2069/2617 and every camera do it).
// Thread: any. Errors: parse functions return nullopt; parse_message sets WHY only for a
// malformed message (an empty WHY means "need more bytes").
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vigil::client::rtsp {

struct RtspUrl {
  std::string host;
  int port = 554;
  std::string user, password;       // percent-decoded; empty: no credentials
  std::string without_credentials;  // the URL as the camera is asked for it (no user:password@)
};
std::optional<RtspUrl> parse_rtsp_url(std::string_view url, std::string& why);

// The largest message head (start line and headers) and body a camera may send: an SDP is a few
// KiB; anything larger is not a camera speaking RTSP.
inline constexpr std::size_t kMaxHeadBytes = 16 * 1024;
inline constexpr std::size_t kMaxBodyBytes = 64 * 1024;

struct RtspMessage {
  bool is_response = false;
  int status = 0;  // a response's status code
  std::string reason;
  std::string method, uri;                                   // a request's
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, in order
  std::string body;
  std::size_t consumed_bytes = 0;  // how much of the input this message took

  // The first header named NAME (lower case), if any.
  std::optional<std::string_view> header(std::string_view name) const;
};

// One message at the start of BYTES (a response "RTSP/1.0 200 OK", or a request line). nullopt
// with WHY empty: the message is not complete yet.
std::optional<RtspMessage> parse_message(std::string_view bytes, std::string& why);

// The Authorization header's value answering the challenges of a 401 (every WWW-Authenticate of
// RESPONSE; Digest is preferred to Basic) for METHOD on URI; nullopt when none is supported.
std::optional<std::string> authorization(const RtspMessage& response, const std::string& user,
                                         const std::string& password, std::string_view method, std::string_view uri);

// Digest's response value (RFC 2617 §3.2.2.1, MD5): with QOP "auth", NC and CNONCE take part;
// with QOP empty, RFC 2069's form (what most cameras ask for).
std::string digest_response(std::string_view user, std::string_view realm, std::string_view password,
                            std::string_view method, std::string_view uri, std::string_view nonce, std::string_view qop,
                            std::string_view nc, std::string_view cnonce);

// A request: start line, CSeq, the extra header lines (each ending "\r\n"), a blank line.
std::string request(std::string_view method, std::string_view uri, int cseq, std::string_view extra_headers);

// A SETUP or PLAY target: CONTROL (a=control) resolved against BASE (Content-Base, else the URL).
std::string resolve_control(std::string_view base, std::string_view control);

}  // namespace vigil::client::rtsp
