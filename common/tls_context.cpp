#include "common/tls_context.hpp"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>
#include <cstdlib>
#include <stdexcept>

namespace asio = boost::asio;

namespace vigil {
namespace {

// TLS 1.2: forward-secret AEAD suites only (TLS 1.3's are all of that kind).
constexpr const char* kTls12Ciphers = "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL:!eNULL:!MD5:!RC4:!3DES:!DSS:!PSK:!SRP";

void tls12_or_later(asio::ssl::context& ctx) {
  ctx.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                  asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
  ::SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  ::SSL_CTX_set_cipher_list(ctx.native_handle(), kTls12Ciphers);
}

}  // namespace

std::shared_ptr<asio::ssl::context> make_server_tls_context(const std::filesystem::path& cert,
                                                            const std::filesystem::path& key, const std::string& flag) {
  auto tls = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  tls12_or_later(*tls);
  // The server's suite preference; no session tickets (their key would live as long as the
  // process), no renegotiation.
  ::SSL_CTX_set_options(tls->native_handle(),
                        SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
  try {
    tls->use_certificate_chain_file(cert.string());
  } catch (const std::exception& e) {
    throw std::runtime_error("TLS: cannot use " + flag + "-cert " + cert.string() +
                             " (a PEM certificate chain): " + e.what());
  }
  try {
    tls->use_private_key_file(key.string(), asio::ssl::context::pem);
  } catch (const std::exception& e) {
    throw std::runtime_error("TLS: cannot use " + flag + "-key " + key.string() + " (a PEM private key): " + e.what());
  }
  if (::SSL_CTX_check_private_key(tls->native_handle()) != 1) {
    throw std::runtime_error("TLS: " + flag + "-key " + key.string() + " is not the key of " + flag + "-cert " +
                             cert.string());
  }
  return tls;
}

std::shared_ptr<asio::ssl::context> make_client_tls_context(const std::string& ca_file) {
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  tls12_or_later(*ctx);
  std::string ca = ca_file;
  std::string what = "CA file";
  if (ca.empty()) {
    if (const char* env = std::getenv("VIGIL_TLS_CA"); env && *env) ca = env, what = "VIGIL_TLS_CA";
  }
  boost::system::error_code ec;
  if (ca.empty()) ctx->set_default_verify_paths(ec);
  else ctx->load_verify_file(ca, ec);
  if (ec) throw std::runtime_error("cannot read " + what + " " + ca + ": " + ec.message());
  ctx->set_verify_mode(asio::ssl::verify_peer);
  return ctx;
}

void verify_server_name(void* handle, const std::string& host) {
  auto* ssl = static_cast<SSL*>(handle);
  ::SSL_set_verify(ssl, SSL_VERIFY_PEER, nullptr);
  X509_VERIFY_PARAM* param = ::SSL_get0_param(ssl);
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (!ec) {
    // An address must be among the certificate's IP subjectAltNames.
    ::X509_VERIFY_PARAM_set1_ip_asc(param, address.to_string().c_str());
  } else {
    ::X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    ::X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
    ::SSL_set_tlsext_host_name(ssl, host.c_str());  // SNI: names only (RFC 6066)
  }
}

}  // namespace vigil
