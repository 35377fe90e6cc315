#include "client/rtsp/rtsp_message.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <map>
#include <span>

namespace vigil::client::rtsp {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && lower(s.substr(0, prefix.size())) == prefix;
}

std::optional<std::string> percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    unsigned value = 0;
    if (i + 2 >= s.size()) return std::nullopt;  // "%" needs two hex digits after it
    const auto [end, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, value, 16);
    if (ec != std::errc() || end != s.data() + i + 3) return std::nullopt;
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
}

// BYTES in lower-case hex, as Digest writes hashes and nonces.
std::string hex(std::span<const unsigned char> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes.size());
  for (const unsigned char b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 0x0f];
  }
  return out;
}

std::string md5_hex(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_Digest(text.data(), text.size(), digest.data(), &length, EVP_md5(), nullptr);
  return hex(std::span(digest.data(), length));
}

std::string base64(std::string_view text) {
  std::string out(4 * ((text.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// The parameters of one challenge: key=value or key="quoted value", separated by commas.
std::map<std::string, std::string> challenge_params(std::string_view s) {
  std::map<std::string, std::string> params;
  while (!s.empty()) {
    s = trim(s);
    while (!s.empty() && s.front() == ',') s = trim(s.substr(1));
    const auto eq = s.find('=');
    if (eq == std::string_view::npos) break;
    std::string key = lower(trim(s.substr(0, eq)));
    s.remove_prefix(eq + 1);
    s = trim(s);
    std::string value;
    if (!s.empty() && s.front() == '"') {
      std::size_t i = 1;
      for (; i < s.size() && s[i] != '"'; ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        value += s[i];
      }
      s.remove_prefix(std::min(s.size(), i + 1));
    } else {
      const auto comma = s.find(',');
      value = std::string(trim(s.substr(0, comma)));
      s.remove_prefix(comma == std::string_view::npos ? s.size() : comma);
    }
    params.emplace(std::move(key), std::move(value));
  }
  return params;
}

std::optional<std::string> digest(const std::map<std::string, std::string>& p, const std::string& user,
                                  const std::string& password, std::string_view method, std::string_view uri) {
  const auto realm = p.find("realm"), nonce = p.find("nonce");
  if (realm == p.end() || nonce == p.end()) return std::nullopt;
  if (const auto alg = p.find("algorithm"); alg != p.end() && lower(alg->second) != "md5") return std::nullopt;
  std::string value = "Digest username=\"" + user + "\", realm=\"" + realm->second + "\", nonce=\"" + nonce->second +
                      "\", uri=\"" + std::string(uri) + "\"";
  const auto qop = p.find("qop");
  if (qop != p.end() && lower(qop->second).find("auth") != std::string::npos) {
    std::array<unsigned char, 8> random{};
    RAND_bytes(random.data(), static_cast<int>(random.size()));
    const std::string cnonce = hex(random);
    const std::string nc = "00000001";
    value += ", response=\"" +
             digest_response(user, realm->second, password, method, uri, nonce->second, "auth", nc, cnonce) +
             "\", qop=auth, nc=" + nc + ", cnonce=\"" + cnonce + "\"";
  } else {
    value +=
        ", response=\"" + digest_response(user, realm->second, password, method, uri, nonce->second, "", "", "") + "\"";
  }
  if (const auto opaque = p.find("opaque"); opaque != p.end()) value += ", opaque=\"" + opaque->second + "\"";
  value += ", algorithm=MD5";
  return value;
}

}  // namespace

std::string digest_response(std::string_view user, std::string_view realm, std::string_view password,
                            std::string_view method, std::string_view uri, std::string_view nonce, std::string_view qop,
                            std::string_view nc, std::string_view cnonce) {
  const auto join = [](std::initializer_list<std::string_view> parts) {
    std::string out;
    bool first = true;
    for (const auto p : parts) {
      if (!first) out += ':';
      out.append(p);
      first = false;
    }
    return out;
  };
  const std::string ha1 = md5_hex(join({user, realm, password}));
  const std::string ha2 = md5_hex(join({method, uri}));
  if (qop.empty()) return md5_hex(join({ha1, nonce, ha2}));
  return md5_hex(join({ha1, nonce, nc, cnonce, qop, ha2}));
}

std::optional<RtspUrl> parse_rtsp_url(std::string_view url, std::string& why) {
  constexpr std::string_view scheme = "rtsp://";
  if (!starts_with_nocase(url, scheme)) {
    why = "not an rtsp:// URL";
    return std::nullopt;
  }
  // The URL goes into request lines as it is: a space or control character would end the line
  // early or add a header.
  for (const char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      why = "a space or control character in the URL";
      return std::nullopt;
    }
  }
  std::string_view rest = url.substr(scheme.size());
  const auto path_at = rest.find('/');
  std::string_view authority = rest.substr(0, path_at);
  const std::string_view path = path_at == std::string_view::npos ? std::string_view("/") : rest.substr(path_at);
  RtspUrl out;
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = authority.substr(0, at);
    authority.remove_prefix(at + 1);
    const auto colon = userinfo.find(':');
    auto user = percent_decode(userinfo.substr(0, colon));
    auto password =
        colon == std::string_view::npos ? std::optional<std::string>("") : percent_decode(userinfo.substr(colon + 1));
    if (!user || !password) {
      why = "bad percent-encoding in the URL's credentials";
      return std::nullopt;
    }
    out.user = std::move(*user);
    out.password = std::move(*password);
  }
  std::string_view host = authority;
  if (!host.empty() && host.front() == '[') {  // an IPv6 literal
    const auto close = host.find(']');
    if (close == std::string_view::npos) {
      why = "unterminated IPv6 address in the URL";
      return std::nullopt;
    }
    out.host = std::string(host.substr(1, close - 1));
    host.remove_prefix(close + 1);
    if (!host.empty() && host.front() != ':') {
      why = "bad port in the URL";
      return std::nullopt;
    }
  } else {
    const auto colon = host.find(':');
    out.host = std::string(host.substr(0, colon));
    host.remove_prefix(colon == std::string_view::npos ? host.size() : colon);
  }
  if (!host.empty()) {  // ":PORT"
    const auto digits = host.substr(1);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out.port);
    if (ec != std::errc() || end != digits.data() + digits.size() || out.port <= 0 || out.port > 65535) {
      why = "bad port in the URL";
      return std::nullopt;
    }
  }
  if (out.host.empty()) {
    why = "no host in the URL";
    return std::nullopt;
  }
  out.without_credentials = std::string(scheme) + std::string(authority) + std::string(path);
  return out;
}

std::optional<std::string_view> RtspMessage::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return std::string_view(v);
  }
  return std::nullopt;
}

std::optional<RtspMessage> parse_message(std::string_view bytes, std::string& why) {
  why.clear();
  auto head_end = bytes.find("\r\n\r\n");
  std::size_t separator = 4;
  if (const auto lf = bytes.find("\n\n"); lf != std::string_view::npos && lf < head_end) {
    head_end = lf;  // a camera that ends its lines with bare LF
    separator = 2;
  }
  if (head_end == std::string_view::npos) {
    if (bytes.size() > kMaxHeadBytes) why = "message head larger than " + std::to_string(kMaxHeadBytes) + " bytes";
    return std::nullopt;
  }
  if (head_end > kMaxHeadBytes) {
    why = "message head larger than " + std::to_string(kMaxHeadBytes) + " bytes";
    return std::nullopt;
  }
  RtspMessage m;
  std::string_view head = bytes.substr(0, head_end);
  const auto line_end = head.find('\n');
  const std::string_view start = trim(head.substr(0, line_end));
  head.remove_prefix(line_end == std::string_view::npos ? head.size() : line_end + 1);
  if (start.starts_with("RTSP/")) {
    // "RTSP/1.0 200 OK"
    const auto sp = start.find(' ');
    if (sp == std::string_view::npos || start.size() < sp + 4) {
      why = "bad status line";
      return std::nullopt;
    }
    const auto code = start.substr(sp + 1, 3);
    const auto [end, ec] = std::from_chars(code.data(), code.data() + code.size(), m.status);
    if (ec != std::errc() || end != code.data() + code.size() || m.status < 100 || m.status > 999) {
      why = "bad status code";
      return std::nullopt;
    }
    m.is_response = true;
    m.reason = std::string(trim(start.substr(std::min(start.size(), sp + 4))));
  } else {
    // "METHOD URI RTSP/1.0"
    const auto first = start.find(' ');
    const auto version = start.rfind(" RTSP/");
    if (first == std::string_view::npos || version == std::string_view::npos || version <= first) {
      why = "neither a response nor a request";
      return std::nullopt;
    }
    m.method = std::string(start.substr(0, first));
    m.uri = std::string(trim(start.substr(first + 1, version - first - 1)));
  }
  while (!head.empty()) {
    const auto end = head.find('\n');
    const std::string_view line = trim(head.substr(0, end));
    head.remove_prefix(end == std::string_view::npos ? head.size() : end + 1);
    if (line.empty()) continue;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) {
      why = "header line without a colon";
      return std::nullopt;
    }
    m.headers.emplace_back(lower(trim(line.substr(0, colon))), std::string(trim(line.substr(colon + 1))));
  }
  std::size_t body_bytes = 0;
  if (const auto length = m.header("content-length")) {
    const auto [end, ec] = std::from_chars(length->data(), length->data() + length->size(), body_bytes);
    if (ec != std::errc() || end != length->data() + length->size()) {
      why = "bad Content-Length";
      return std::nullopt;
    }
    if (body_bytes > kMaxBodyBytes) {
      why = "body larger than " + std::to_string(kMaxBodyBytes) + " bytes";
      return std::nullopt;
    }
  }
  const std::size_t total = head_end + separator + body_bytes;
  if (bytes.size() < total) return std::nullopt;
  m.body = std::string(bytes.substr(head_end + separator, body_bytes));
  m.consumed_bytes = total;
  return m;
}

std::optional<std::string> authorization(const RtspMessage& response, const std::string& user,
                                         const std::string& password, std::string_view method, std::string_view uri) {
  std::optional<std::string> basic;
  for (const auto& [name, value] : response.headers) {
    if (name != "www-authenticate") continue;
    if (starts_with_nocase(value, "digest ")) {
      if (auto d = digest(challenge_params(std::string_view(value).substr(7)), user, password, method, uri)) return d;
    } else if (starts_with_nocase(value, "basic")) {
      basic = "Basic " + base64(user + ":" + password);
    }
  }
  return basic;
}

std::string request(std::string_view method, std::string_view uri, int cseq, std::string_view extra_headers) {
  std::string r;
  r.reserve(128 + uri.size() + extra_headers.size());
  r.append(method).append(" ").append(uri).append(" RTSP/1.0\r\nCSeq: ").append(std::to_string(cseq));
  r.append("\r\nUser-Agent: vigil\r\n").append(extra_headers).append("\r\n");
  return r;
}

std::string resolve_control(std::string_view base, std::string_view control) {
  if (control.empty() || control == "*") return std::string(base);
  if (starts_with_nocase(control, "rtsp://")) return std::string(control);
  std::string out(base);
  if (!out.empty() && out.back() != '/') out += '/';
  out.append(control);
  return out;
}

}  // namespace vigil::client::rtsp
