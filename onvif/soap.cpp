#include "onvif/soap.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "onvif/xml_tree.hpp"

namespace vigil::onvif {
namespace {

constexpr std::string_view kEnvelopeStart =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
    "<s:Envelope xmlns:s=\"http://www.w3.org/2003/05/soap-envelope\" "
    "xmlns:tds=\"http://www.onvif.org/ver10/device/wsdl\" xmlns:trt=\"http://www.onvif.org/ver10/media/wsdl\" "
    "xmlns:tt=\"http://www.onvif.org/ver10/schema\">";

std::string random_bytes(std::size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    throw OnvifError("no random bytes for a nonce");
  }
  return out;
}

std::string utc_now() {
  const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string security_header(const Credentials& c) {
  if (c.user.empty()) return {};
  const auto nonce = random_bytes(16);
  const auto created = utc_now();
  return "<s:Header><wsse:Security s:mustUnderstand=\"1\" "
         "xmlns:wsse=\"http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd\" "
         "xmlns:wsu=\"http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd\">"
         "<wsse:UsernameToken><wsse:Username>" +
         xml_escape(c.user) +
         "</wsse:Username><wsse:Password "
         "Type=\"http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordDigest\">" +
         password_digest(nonce, created, c.password) +
         "</wsse:Password><wsse:Nonce "
         "EncodingType=\"http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-soap-message-security-1.0#Base64Binary\">" +
         base64_encode(nonce) + "</wsse:Nonce><wsu:Created>" + created +
         "</wsu:Created></wsse:UsernameToken></wsse:Security></s:Header>";
}

std::string request(const Credentials& c, std::string_view body) {
  return std::string(kEnvelopeStart) + security_header(c) + "<s:Body>" + std::string(body) + "</s:Body></s:Envelope>";
}

XmlElement parse_reply(std::string_view xml) {
  try {
    return parse_xml(xml);
  } catch (const XmlError& e) {
    throw OnvifError(std::string("the device's reply: ") + e.what());
  }
}

// The reply's Body, after any fault in it was thrown.
const XmlElement& body_of(const XmlElement& envelope) {
  if (envelope.name != "Envelope") throw OnvifError("the device's reply is not a SOAP envelope");
  const auto* body = envelope.child("Body");
  if (body == nullptr) throw OnvifError("the device's reply has no SOAP Body");
  if (const auto* fault = body->child("Fault")) {
    std::string codes;
    for (const auto* v : fault->find_all("Value")) codes += (codes.empty() ? "" : " ") + v->text;
    std::string reason(fault->text_of("Text"));
    if (reason.empty()) reason = std::string(fault->text_of("faultstring"));  // SOAP 1.1
    const std::string what =
        "the device answered a SOAP fault: " + (reason.empty() ? codes : reason + " (" + codes + ")");
    if (codes.find("NotAuthorized") != std::string::npos || codes.find("FailedAuthentication") != std::string::npos) {
      throw NotAuthorized(what + ": wrong user or password, or a user is needed (--user, --password)");
    }
    throw SoapFault(what);
  }
  return *body;
}

int to_int(std::string_view s) {
  int v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc{} && p == s.data() + s.size() && v >= 0 ? v : 0;
}

double to_double(std::string_view s) {
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc{} && p == s.data() + s.size() && v >= 0 && v < 1e6 ? v : 0;
}

std::string percent_decoded(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int v = 0;
      const auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
      if (ec == std::errc{} && p == s.data() + i + 3) {
        out += static_cast<char>(v);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) ++i;
    const auto start = i;
    while (i < s.size() && !(s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) ++i;
    if (i > start) out.emplace_back(s.substr(start, i - start));
  }
  return out;
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string base64_decode(std::string_view text) {
  if (text.size() % 4 != 0 || text.size() > (1u << 20)) throw OnvifError("bad base64");
  std::string out(3 * (text.size() / 4) + 1, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) throw OnvifError("bad base64");
  // EVP_DecodeBlock counts the padding as zero bytes.
  std::size_t len = static_cast<std::size_t>(n);
  for (auto it = text.rbegin(); it != text.rend() && *it == '=' && len > 0; ++it) --len;
  out.resize(len);
  return out;
}

std::string password_digest(std::string_view nonce, std::string_view created, std::string_view password) {
  std::string input;
  input.append(nonce).append(created).append(password);
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  return base64_encode(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

std::string new_message_id() {
  auto b = random_bytes(16);
  b[6] = static_cast<char>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<char>((b[8] & 0x3f) | 0x80);
  char out[64];
  std::size_t at = 0;
  at += static_cast<std::size_t>(std::snprintf(out, sizeof out, "urn:uuid:"));
  for (std::size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out[at++] = '-';
    at += static_cast<std::size_t>(std::snprintf(out + at, sizeof out - at, "%02x", static_cast<unsigned char>(b[i])));
  }
  return std::string(out, at);
}

std::string probe_message(std::string_view message_id) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
         "<s:Envelope xmlns:s=\"http://www.w3.org/2003/05/soap-envelope\" "
         "xmlns:a=\"http://schemas.xmlsoap.org/ws/2004/08/addressing\" "
         "xmlns:d=\"http://schemas.xmlsoap.org/ws/2005/04/discovery\" "
         "xmlns:dn=\"http://www.onvif.org/ver10/network/wsdl\"><s:Header>"
         "<a:Action s:mustUnderstand=\"1\">http://schemas.xmlsoap.org/ws/2005/04/discovery/Probe</a:Action>"
         "<a:MessageID>" +
         xml_escape(message_id) +
         "</a:MessageID><a:ReplyTo><a:Address>http://schemas.xmlsoap.org/ws/2004/08/addressing/role/anonymous"
         "</a:Address></a:ReplyTo><a:To s:mustUnderstand=\"1\">urn:schemas-xmlsoap-org:ws:2005:04:discovery</a:To>"
         "</s:Header><s:Body><d:Probe><d:Types>dn:NetworkVideoTransmitter</d:Types></d:Probe></s:Body></s:Envelope>";
}

std::vector<ProbeMatch> parse_probe_matches(std::string_view xml) {
  const auto envelope = parse_reply(xml);
  const auto& body = body_of(envelope);
  const auto* matches = body.child("ProbeMatches");
  if (matches == nullptr) return {};
  std::string relates(envelope.text_of("RelatesTo"));
  std::vector<ProbeMatch> out;
  for (const auto& m : matches->children) {
    if (m.name != "ProbeMatch") continue;
    if (out.size() == kMaxProbeMatches) break;
    ProbeMatch p;
    p.relates_to = relates;
    p.endpoint = std::string(m.text_of("Address"));
    p.xaddrs = words(m.text_of("XAddrs"));
    p.scopes = words(m.text_of("Scopes"));
    for (const auto& s : p.scopes) {
      constexpr std::string_view kName = "onvif://www.onvif.org/name/";
      constexpr std::string_view kHardware = "onvif://www.onvif.org/hardware/";
      if (s.starts_with(kName)) p.name = percent_decoded(std::string_view(s).substr(kName.size()));
      if (s.starts_with(kHardware)) p.hardware = percent_decoded(std::string_view(s).substr(kHardware.size()));
    }
    if (p.xaddrs.empty()) continue;  // nothing to ask: a device answers GetCapabilities at an XAddr
    out.push_back(std::move(p));
  }
  return out;
}

std::string get_capabilities_request(const Credentials& c) {
  return request(c, "<tds:GetCapabilities><tds:Category>Media</tds:Category></tds:GetCapabilities>");
}

std::string get_profiles_request(const Credentials& c) { return request(c, "<trt:GetProfiles/>"); }

std::string get_stream_uri_request(const Credentials& c, std::string_view token) {
  return request(c,
                 "<trt:GetStreamUri><trt:StreamSetup><tt:Stream>RTP-Unicast</tt:Stream><tt:Transport>"
                 "<tt:Protocol>RTSP</tt:Protocol></tt:Transport></trt:StreamSetup><trt:ProfileToken>" +
                     xml_escape(token) + "</trt:ProfileToken></trt:GetStreamUri>");
}

std::string parse_media_url(std::string_view xml) {
  const auto envelope = parse_reply(xml);
  const auto& body = body_of(envelope);
  const auto* media = body.find("Media");
  if (media == nullptr || media->text_of("XAddr").empty()) {
    throw OnvifError("the device has no media service (GetCapabilities lists none)");
  }
  return std::string(media->text_of("XAddr"));
}

std::vector<Profile> parse_profiles(std::string_view xml) {
  const auto envelope = parse_reply(xml);
  const auto& body = body_of(envelope);
  const auto* response = body.child("GetProfilesResponse");
  if (response == nullptr) throw OnvifError("the device's reply is not a GetProfilesResponse");
  std::vector<Profile> out;
  for (const auto& p : response->children) {
    if (p.name != "Profiles") continue;
    if (out.size() == kMaxProfiles) {
      throw OnvifError("the device lists more than " + std::to_string(kMaxProfiles) + " profiles");
    }
    Profile profile;
    profile.token = std::string(p.attribute("token"));
    if (profile.token.empty()) throw OnvifError("a profile without a token");
    if (const auto* n = p.child("Name")) profile.name = n->text;
    if (const auto* video = p.child("VideoEncoderConfiguration")) {
      profile.encoding = std::string(video->child("Encoding") ? video->child("Encoding")->text : "");
      if (const auto* r = video->child("Resolution")) {
        profile.width = to_int(r->text_of("Width"));
        profile.height = to_int(r->text_of("Height"));
      }
      if (const auto* rate = video->child("RateControl")) {
        profile.frame_rate = to_double(rate->text_of("FrameRateLimit"));
        profile.bitrate_kbps = to_int(rate->text_of("BitrateLimit"));
      }
    }
    out.push_back(std::move(profile));
  }
  return out;
}

std::string parse_stream_uri(std::string_view xml) {
  const auto envelope = parse_reply(xml);
  const auto& body = body_of(envelope);
  const auto* media_uri = body.find("MediaUri");
  const auto uri = media_uri == nullptr ? std::string_view{} : media_uri->text_of("Uri");
  if (uri.empty()) throw OnvifError("the device's GetStreamUri reply has no Uri");
  return std::string(uri);
}

void throw_if_fault(std::string_view xml) { body_of(parse_reply(xml)); }

std::string without_credentials(std::string_view url) {
  const auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  const auto host_start = scheme + 3;
  const auto path = url.find('/', host_start);
  const auto at = url.rfind('@', path == std::string_view::npos ? url.size() : path);
  if (at == std::string_view::npos || at < host_start) return std::string(url);
  return std::string(url.substr(0, host_start)) + std::string(url.substr(at + 1));
}

}  // namespace vigil::onvif
