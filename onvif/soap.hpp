#pragma once
// The SOAP messages of ONVIF discovery, built and read: the WS-Discovery Probe and its
// ProbeMatches, the device service's GetCapabilities (where the media service is), the media
// service's GetProfiles and GetStreamUri (RTP-Unicast over RTSP), and the WS-Security
// UsernameToken with PasswordDigest (ONVIF Core 5.12: base64(SHA-1(nonce + created + password)))
// that a device with users wants on each. Pure: no sockets.
// Thread: any. Errors: the parse_* functions throw OnvifError for a reply that is not what was
// asked (XmlError's text inside), NotAuthorized for a SOAP fault saying so, SoapFault for any other.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::onvif {

struct OnvifError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct SoapFault : OnvifError {
  using OnvifError::OnvifError;
};
struct NotAuthorized : SoapFault {
  using SoapFault::SoapFault;
};

struct Credentials {
  std::string user;  // empty: no WS-Security header
  std::string password;
};

// One ProbeMatch: the device's endpoint reference, its service addresses and scopes.
struct ProbeMatch {
  std::string endpoint;             // wsa:EndpointReference/Address, e.g. urn:uuid:...
  std::vector<std::string> xaddrs;  // device service URLs
  std::vector<std::string> scopes;  // as sent
  std::string name;                 // from onvif://www.onvif.org/name/..., percent-decoded
  std::string hardware;             // from onvif://www.onvif.org/hardware/...
  std::string relates_to;           // the MessageID of the probe answered
};

struct Profile {
  std::string token;
  std::string name;
  std::string encoding;  // "H264", "H265", "JPEG", ...
  int width = 0;
  int height = 0;
  double frame_rate = 0;  // frames per second, 0 unknown
  int bitrate_kbps = 0;   // the encoder's limit, 0 unknown
  std::string uri;        // its RTSP URI (GetStreamUri), filled by the discovery
};

constexpr std::size_t kMaxProfiles = 64;
constexpr std::size_t kMaxProbeMatches = 256;

// base64 of BYTES, and back (throws OnvifError on bad input).
std::string base64_encode(std::string_view bytes);
std::string base64_decode(std::string_view text);
// base64(SHA-1(NONCE + CREATED + PASSWORD)); NONCE raw bytes.
std::string password_digest(std::string_view nonce, std::string_view created, std::string_view password);
// A fresh urn:uuid:... for a MessageID.
std::string new_message_id();

// The WS-Discovery Probe for dn:NetworkVideoTransmitter with MESSAGE_ID.
std::string probe_message(std::string_view message_id);
// The matches of one ProbeMatches datagram (none for a datagram that is something else).
std::vector<ProbeMatch> parse_probe_matches(std::string_view xml);

// Requests, each with a fresh UsernameToken when CREDENTIALS has a user.
std::string get_capabilities_request(const Credentials& credentials);
std::string get_profiles_request(const Credentials& credentials);
std::string get_stream_uri_request(const Credentials& credentials, std::string_view profile_token);
// The media service URL of a GetCapabilitiesResponse.
std::string parse_media_url(std::string_view xml);
// The profiles of a GetProfilesResponse (at most kMaxProfiles; more is an OnvifError).
std::vector<Profile> parse_profiles(std::string_view xml);
// The URI of a GetStreamUriResponse.
std::string parse_stream_uri(std::string_view xml);
// Throws the SoapFault (or NotAuthorized) XML carries, if any; OnvifError if it is not XML.
void throw_if_fault(std::string_view xml);

// URL without its user:password@, for printing.
std::string without_credentials(std::string_view url);

}  // namespace vigil::onvif
